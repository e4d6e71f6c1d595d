// An upstream for the faults the simulator does not play: a connection reset in the middle of a body, a
// body larger than the gateway's cap, a storm of 429s, and a port that refuses connections. Every create
// is answered as the service answers it, unless a fault is set.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { listenOnLoopback } from '../../support/free-port.ts';

export type UpstreamFault = 'reset mid-body' | 'oversized' | 'rate limited';

export interface FaultyUpstream {
  url: string;
  server: Server;
  set(fault: UpstreamFault | undefined): void;
  /** Closes the listener and every connection: the port refuses until listen() again. */
  refuse(): Promise<void>;
  listen(): Promise<void>;
  close(): Promise<void>;
}

export const STORM_RETRY_AFTER_SECONDS = 7;
const RATE_LIMITED_BODY = JSON.stringify({
  status: 429,
  error: { code: 'rate_limit_exceeded', type: 'rate_limit_error', message: 'too many requests' },
});
// Sent in pieces, so the gateway stops reading as soon as it has more than its cap.
const OVERSIZED_CHUNK = Buffer.alloc(1024 * 1024, 0x20);

function requestIdOf(body: string): string {
  // A read (the gateway's start-up check of its credential) has no body.
  if (body === '') return '';
  const parsed = JSON.parse(body) as { requestId?: unknown };
  return typeof parsed.requestId === 'string' ? parsed.requestId : '';
}

function answer(fault: UpstreamFault | undefined, body: string, response: ServerResponse): void {
  const created = JSON.stringify({ status: 200, data: { requestId: requestIdOf(body) } });
  if (fault === 'rate limited') {
    response.writeHead(429, {
      'content-type': 'application/json',
      'retry-after': String(STORM_RETRY_AFTER_SECONDS),
    });
    response.end(RATE_LIMITED_BODY);
    return;
  }
  if (fault === 'reset mid-body') {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(created.length) });
    response.write(created.slice(0, created.length >> 1), () => response.socket?.resetAndDestroy());
    return;
  }
  if (fault === 'oversized') {
    // No content-length: the size shows only as the body arrives, as with a chunked answer.
    response.writeHead(200, { 'content-type': 'application/json' });
    const writeMore = (): void => {
      while (!response.destroyed && response.write(OVERSIZED_CHUNK));
    };
    response.on('drain', writeMore);
    writeMore();
    return;
  }
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(created);
}

export async function startFaultyUpstream(): Promise<FaultyUpstream> {
  let fault: UpstreamFault | undefined;
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      answer(fault, Buffer.concat(chunks).toString('utf8'), response);
    });
  });
  // Already refusing: closeAll() finds it not running, which is fine here.
  const { port, closeAll: refuse } = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    set(next) {
      fault = next;
    },
    refuse,
    async listen() {
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
    },
    close: refuse,
  };
}
