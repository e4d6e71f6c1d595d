// The body of a request is memory held for an exchange as much as its answer: it is read whole, parsed,
// and kept to be forwarded. Eighty clients each sending a 10 MiB create at once would hold 800 MiB of
// bodies before a single one is parsed, past the chart's whole memory limit. So before a body is read its
// declared length (or server.bodyLimitBytes when it declares none) is counted against the process's bound
// on bytes in flight (src/upstream/bytes-in-flight.ts); a body that does not fit is not read at all: 503
// overloaded with Retry-After, and the connection closes after it (the body left in it is not worth
// reading). The count is released when the exchange's answer has left or its connection closed.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { gatewayError } from '../errors/registry.ts';
import type { BytesInFlight } from '../upstream/bytes-in-flight.ts';

export interface RequestBodyHoldOptions {
  bytesInFlight: BytesInFlight;
  bodyLimitBytes: number;
  retryAfterSeconds: number;
  /** Called for each request refused because its body did not fit. */
  onFull: () => void;
}

/** The preParsing step of the routes that take a body: counts the body before it is read, or refuses it. */
export function createRequestBodyHold(options: RequestBodyHoldOptions) {
  const { bytesInFlight, bodyLimitBytes } = options;
  const overloadedHeaders = { 'retry-after': String(options.retryAfterSeconds) };
  const held = new Map<ServerResponse, number>();
  // Shared by every response (`this` is the response): no closure per request.
  function release(this: ServerResponse) {
    const bytes = held.get(this);
    if (bytes === undefined) return;
    held.delete(this);
    bytesInFlight.release(bytes);
  }
  return function holdRequestBody(
    request: FastifyRequest,
    reply: FastifyReply,
    payload: Readable,
    done: (error: Error | null, payload?: Readable) => void,
  ): void {
    const declared = Number(request.headers['content-length']);
    // A longer declared body is refused with 413 as soon as it is read; chunked bodies may grow to the limit.
    const bytes =
      Number.isSafeInteger(declared) && declared >= 0 ? Math.min(declared, bodyLimitBytes) : bodyLimitBytes;
    if (!bytesInFlight.hold(bytes)) {
      options.onFull();
      reply.header('connection', 'close');
      done(gatewayError('bytes_in_flight_full', { headers: overloadedHeaders }));
      return;
    }
    held.set(reply.raw, bytes);
    reply.raw.once('close', release);
    done(null, payload);
  };
}
