// The one way requests leave gengate. Each exchange is read whole (bounded in time and size) before the
// client is answered, so a stalled or broken upstream becomes a clean 502/504 instead of a torn response.
// At most `connections` exchanges run at once (one per connection); a request that waits longer than
// `queueTimeoutMs` for its turn is answered 503 overloaded: nothing was sent, so the client may retry at
// once elsewhere, and a slow upstream cannot pile up unbounded work (and memory) in the gateway. No
// tenant holds more than `maxTenantShare` of the connections: with a slow upstream one tenant's polls
// took all of them and every other tenant's creates waited out their turn (503 for a minute); its
// requests beyond its share wait for one of its own exchanges to end, and a freed connection goes to the
// first request waiting whose tenant is below its share. Every body being read counts against one bound
// per process on the bytes held for answers (./bytes-in-flight.ts); an exchange that would go past it is cut
// and answered 503 overloaded.
import type { IncomingHttpHeaders } from 'node:http';
import { Pool, type Dispatcher } from 'undici';
import type { GatewayMetrics } from '../observability/metrics.ts';
import { createBytesInFlight, type BytesInFlight } from './bytes-in-flight.ts';
import {
  type GatewayConfig,
  DEFAULT_MAX_BYTES_IN_FLIGHT,
  DEFAULT_OVERLOAD_RETRY_AFTER_SECONDS,
  DEFAULT_UPSTREAM_CONNECTIONS,
  DEFAULT_UPSTREAM_MAX_RESPONSE_BYTES,
  DEFAULT_UPSTREAM_QUEUE_TIMEOUT_MS,
} from '../config/schema.ts';
import { GatewayError, gatewayError } from '../errors/registry.ts';

export interface UpstreamRequest {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** Whose request it is: each tenant holds at most its share of the connections. */
  tenant?: string;
}

export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface UpstreamClient {
  send(request: UpstreamRequest): Promise<UpstreamResponse>;
  /** Waits for exchanges in flight, then closes the connections. */
  close(): Promise<void>;
  /** Aborts exchanges in flight at once: for a shutdown whose drain deadline has passed. */
  destroy(): Promise<void>;
  /** The process's count of bytes held for answers, shared with the server writing them. */
  readonly bytesInFlight: BytesInFlight;
}

export interface UpstreamClientOptions {
  baseUrl: string;
  timeoutMs: number;
  maxResponseBytes?: number;
  /** Exchanges at once; further requests wait for one to end. */
  connections?: number;
  /** The share of `connections` one tenant may hold at once (0 to 1). */
  maxTenantShare?: number;
  /** How long a request may wait for its turn before it is answered 503 overloaded. */
  queueTimeoutMs?: number;
  /** Retry-After of that 503. */
  retryAfterSeconds?: number;
  /** Called for each request answered 503 overloaded after waiting for its turn. */
  onQueueTimeout?: () => void;
  /** The bound on bytes held for answers, upstream bodies being read and answers being written. */
  maxBytesInFlight?: number;
  /** Called for each exchange cut, and answered 503 overloaded, because that bound was reached. */
  onBytesInFlightFull?: () => void;
  /** Given the bound on exchanges at once and how to read how many run now, for the metrics. */
  reportConnectionsFrom?: (limit: number, running: () => number) => void;
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code } = error as { code?: unknown };
  return typeof code === 'string' ? code : undefined;
}

/**
 * The cause of a failure that came before the request was written (no connection in time, a connection
 * refused, no turn among the connections): the upstream cannot have taken it.
 */
class RequestNotSent extends Error {
  constructor(cause: unknown) {
    super('the request was not written to the upstream', { cause });
    this.name = 'RequestNotSent';
  }
}

/** Whether `error` came before the request was written to the upstream, which cannot have taken it. */
export function failedBeforeSending(error: unknown): boolean {
  return error instanceof GatewayError && error.cause instanceof RequestNotSent;
}

const causeOf = (error: unknown, sent: boolean): unknown => (sent ? error : new RequestNotSent(error));

function upstreamTimedOut(cause?: unknown): GatewayError {
  return gatewayError('upstream_timeout', { cause });
}

/** Transport failures, translated once: timeouts are 504, everything else (refused, reset, …) 502. */
function translateUpstreamFailure(error: unknown, sent: boolean): GatewayError {
  const code = errorCode(error);
  if (code !== undefined && TIMEOUT_CODES.has(code)) return upstreamTimedOut(causeOf(error, sent));
  return gatewayError('upstream_unreachable', { cause: causeOf(error, sent) });
}

/**
 * One exchange, as undici's dispatch handler: the answer is gathered chunk by chunk into one Buffer and
 * settles the promise once. Not `pool.request()`, whose body is a Readable stream read through an async
 * iterator: that machinery cost more CPU than the gateway's whole policy step (docs/performance.md).
 */
/** What every exchange of one client shares: built once, so an exchange allocates no closures for it. */
interface ExchangeBounds {
  maxResponseBytes: number;
  bytesInFlight: BytesInFlight;
  /** Called when the exchange's next chunk does not fit under `bytesInFlight`; gives its answer. */
  bytesInFlightFull: () => GatewayError;
}

class Exchange implements Dispatcher.DispatchHandler {
  readonly #bounds: ExchangeBounds;
  readonly #onSettled: (outcome: UpstreamResponse | GatewayError) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #abortedWith: Error | undefined;
  /** Whether undici began writing the request (onRequestStart comes just before its first byte). */
  #sent = false;
  #settled = false;
  #status = 0;
  #headers: IncomingHttpHeaders = {};
  #chunks: Buffer[] = [];
  #size = 0;

  constructor(bounds: ExchangeBounds, onSettled: (outcome: UpstreamResponse | GatewayError) => void) {
    this.#bounds = bounds;
    this.#onSettled = onSettled;
  }

  /** Ends the exchange with `error` now; the connection is aborted as soon as undici has one. */
  fail(error: GatewayError): void {
    this.#settle(error);
    this.#abortedWith ??= error;
    this.#controller?.abort(error);
  }

  /** The whole exchange's time is up. */
  timedOut(): void {
    this.fail(upstreamTimedOut(causeOf(undefined, this.#sent)));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    // Aborted here, the request is never written.
    if (this.#abortedWith !== undefined) controller.abort(this.#abortedWith);
    else this.#sent = true;
  }

  onResponseStart(_controller: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders) {
    // 1xx informational answers precede the real one.
    if (status < 200) return;
    if (status > 599) {
      this.fail(gatewayError('upstream_invalid_status'));
      return;
    }
    this.#status = status;
    this.#headers = headers;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    // Chunks still on their way after a failure are not kept (nor counted).
    if (this.#settled) return;
    if (this.#size + chunk.length > this.#bounds.maxResponseBytes) {
      this.fail(gatewayError('upstream_response_too_large'));
      return;
    }
    if (!this.#bounds.bytesInFlight.hold(chunk.length)) {
      this.fail(this.#bounds.bytesInFlightFull());
      return;
    }
    this.#size += chunk.length;
    this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    const [first] = this.#chunks;
    this.#settle({
      status: this.#status,
      headers: this.#headers,
      body:
        first !== undefined && this.#chunks.length === 1 ? first : Buffer.concat(this.#chunks, this.#size),
    });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#settle(error instanceof GatewayError ? error : translateUpstreamFailure(error, this.#sent));
  }

  #settle(outcome: UpstreamResponse | GatewayError): void {
    if (this.#settled) return;
    this.#settled = true;
    // The body read is now the answer's to hold: the server counts it again while it is being written.
    this.#bounds.bytesInFlight.release(this.#size);
    this.#chunks = [];
    this.#onSettled(outcome);
  }
}

/** The client's options as the configuration sets them; its waits that time out are counted as shed. */
export function upstreamClientOptions(
  config: Pick<GatewayConfig, 'upstream' | 'server'>,
  metrics: Pick<GatewayMetrics, 'loadShed' | 'reportUpstreamConnectionsFrom'>,
): UpstreamClientOptions {
  const { upstream } = config;
  return {
    baseUrl: upstream.baseUrl,
    timeoutMs: upstream.timeoutMs,
    connections: upstream.connections,
    maxTenantShare: upstream.maxTenantShare,
    queueTimeoutMs: upstream.queueTimeoutMs,
    maxResponseBytes: upstream.maxResponseBytes,
    retryAfterSeconds: config.server.overload.retryAfterSeconds,
    onQueueTimeout: () => {
      metrics.loadShed.inc({ reason: 'upstream_queue' });
    },
    maxBytesInFlight: config.server.maxBytesInFlight,
    onBytesInFlightFull: () => {
      metrics.loadShed.inc({ reason: 'bytes_in_flight' });
    },
    reportConnectionsFrom: metrics.reportUpstreamConnectionsFrom,
  };
}

interface WaitingTurn {
  tenant: string | undefined;
  start: () => void;
  timer: NodeJS.Timeout;
}

export function createUpstreamClient(options: UpstreamClientOptions): UpstreamClient {
  const origin = new URL(options.baseUrl).origin;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_UPSTREAM_MAX_RESPONSE_BYTES;
  const connections = options.connections ?? DEFAULT_UPSTREAM_CONNECTIONS;
  const queueTimeoutMs = options.queueTimeoutMs ?? DEFAULT_UPSTREAM_QUEUE_TIMEOUT_MS;
  const retryAfterSeconds = options.retryAfterSeconds ?? DEFAULT_OVERLOAD_RETRY_AFTER_SECONDS;
  const bytesInFlight = createBytesInFlight(options.maxBytesInFlight ?? DEFAULT_MAX_BYTES_IN_FLIGHT);
  const overloadedHeaders = { 'retry-after': String(retryAfterSeconds) };
  const bounds: ExchangeBounds = {
    maxResponseBytes,
    bytesInFlight,
    bytesInFlightFull: () => {
      options.onBytesInFlightFull?.();
      return gatewayError('bytes_in_flight_full', { headers: overloadedHeaders });
    },
  };
  const pool = new Pool(origin, {
    connections,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    connectTimeout: Math.min(options.timeoutMs, 10_000),
  });
  const perTenant = Math.max(1, Math.floor(connections * (options.maxTenantShare ?? 1)));
  let running = 0;
  const runningByTenant = new Map<string, number>();
  // In arrival order; a Set so that a request whose wait expired leaves it at once.
  const waiting = new Set<WaitingTurn>();
  options.reportConnectionsFrom?.(connections, () => running);

  const mayRun = (tenant: string | undefined) =>
    running < connections && (tenant === undefined || (runningByTenant.get(tenant) ?? 0) < perTenant);

  function startWaiting(): void {
    for (const turn of waiting) {
      if (running >= connections) return;
      if (!mayRun(turn.tenant)) continue;
      waiting.delete(turn);
      clearTimeout(turn.timer);
      turn.start();
    }
  }

  /** Runs `exchange` now if a connection is free, else once one is; fails if that takes too long. */
  function inTurn<T>(tenant: string | undefined, exchange: () => Promise<T>): Promise<T> {
    const run = () => {
      running += 1;
      if (tenant !== undefined) runningByTenant.set(tenant, (runningByTenant.get(tenant) ?? 0) + 1);
      return exchange().finally(() => {
        running -= 1;
        if (tenant !== undefined) {
          const held = (runningByTenant.get(tenant) ?? 1) - 1;
          if (held === 0) runningByTenant.delete(tenant);
          else runningByTenant.set(tenant, held);
        }
        startWaiting();
      });
    };
    if (mayRun(tenant)) return run();
    return new Promise<T>((resolve, reject) => {
      const turn: WaitingTurn = {
        tenant,
        start: () => {
          run().then(resolve, reject);
        },
        timer: setTimeout(() => {
          waiting.delete(turn);
          options.onQueueTimeout?.();
          reject(
            gatewayError('upstream_queue_full', {
              headers: { 'retry-after': String(retryAfterSeconds) },
              cause: new RequestNotSent(undefined),
            }),
          );
        }, queueTimeoutMs),
      };
      waiting.add(turn);
    });
  }

  function exchangeOnce(request: UpstreamRequest): Promise<UpstreamResponse> {
    return new Promise((resolve, reject) => {
      const exchange = new Exchange(bounds, (outcome) => {
        clearTimeout(deadline);
        if (outcome instanceof GatewayError) reject(outcome);
        else resolve(outcome);
      });
      // Bounds the whole exchange, not just each gap between bytes (undici's own timeouts). Cleared as
      // soon as the exchange settles: a timer that outlived it would hold it in memory for the whole
      // timeout (docs/performance.md).
      const deadline = setTimeout(() => {
        exchange.timedOut();
      }, options.timeoutMs);
      pool.dispatch(
        {
          method: request.method,
          path: request.path,
          headers: request.headers,
          body: request.body ?? null,
        },
        exchange,
      );
    });
  }

  return {
    send: (request) => inTurn(request.tenant, () => exchangeOnce(request)),
    close: () => pool.close(),
    destroy: () => pool.destroy(),
    bytesInFlight,
  };
}
