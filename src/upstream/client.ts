// The one way requests leave gengate. Each exchange is read whole (bounded in time and size) before the
// client is answered, so a stalled or broken upstream becomes a clean 502/504 instead of a torn response.
// At most `connections` exchanges run at once (one per connection); a request that waits longer than
// `queueTimeoutMs` for its turn is answered 503 overloaded: nothing was sent, so the client may retry at
// once elsewhere, and a slow upstream cannot pile up unbounded work (and memory) in the gateway.
import type { IncomingHttpHeaders } from 'node:http';
import { Pool, type Dispatcher } from 'undici';
import type { GatewayMetrics } from '../observability/metrics.ts';
import {
  type GatewayConfig,
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
}

export interface UpstreamClientOptions {
  baseUrl: string;
  timeoutMs: number;
  maxResponseBytes?: number;
  /** Exchanges at once; further requests wait for one to end. */
  connections?: number;
  /** How long a request may wait for its turn before it is answered 503 overloaded. */
  queueTimeoutMs?: number;
  /** Retry-After of that 503. */
  retryAfterSeconds?: number;
  /** Called for each request answered 503 overloaded after waiting for its turn. */
  onQueueTimeout?: () => void;
  /** Given the bound on exchanges at once and how to read how many run now, for the metrics. */
  reportConnectionsFrom?: (limit: number, running: () => number) => void;
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code } = error as { code?: unknown };
  return typeof code === 'string' ? code : undefined;
}

function upstreamTimedOut(cause?: unknown): GatewayError {
  return gatewayError('upstream_timeout', { cause });
}

/** Transport failures, translated once: timeouts are 504, everything else (refused, reset, …) 502. */
function translateUpstreamFailure(error: unknown): GatewayError {
  const code = errorCode(error);
  if (code !== undefined && TIMEOUT_CODES.has(code)) return upstreamTimedOut(error);
  return gatewayError('upstream_unreachable', { cause: error });
}

/**
 * One exchange, as undici's dispatch handler: the answer is gathered chunk by chunk into one Buffer and
 * settles the promise once. Not `pool.request()`, whose body is a Readable stream read through an async
 * iterator: that machinery cost more CPU than the gateway's whole policy step (docs/performance.md).
 */
class Exchange implements Dispatcher.DispatchHandler {
  readonly #maxBytes: number;
  readonly #onSettled: (outcome: UpstreamResponse | GatewayError) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #abortedWith: Error | undefined;
  #settled = false;
  #status = 0;
  #headers: IncomingHttpHeaders = {};
  #chunks: Buffer[] = [];
  #size = 0;

  constructor(maxBytes: number, onSettled: (outcome: UpstreamResponse | GatewayError) => void) {
    this.#maxBytes = maxBytes;
    this.#onSettled = onSettled;
  }

  /** Ends the exchange with `error` now; the connection is aborted as soon as undici has one. */
  fail(error: GatewayError): void {
    this.#settle(error);
    this.#abortedWith ??= error;
    this.#controller?.abort(error);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#abortedWith !== undefined) controller.abort(this.#abortedWith);
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
    this.#size += chunk.length;
    if (this.#size > this.#maxBytes) {
      this.fail(gatewayError('upstream_response_too_large'));
      return;
    }
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
    this.#settle(error instanceof GatewayError ? error : translateUpstreamFailure(error));
  }

  #settle(outcome: UpstreamResponse | GatewayError): void {
    if (this.#settled) return;
    this.#settled = true;
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
    queueTimeoutMs: upstream.queueTimeoutMs,
    maxResponseBytes: upstream.maxResponseBytes,
    retryAfterSeconds: config.server.overload.retryAfterSeconds,
    onQueueTimeout: () => {
      metrics.loadShed.inc({ reason: 'upstream_queue' });
    },
    reportConnectionsFrom: metrics.reportUpstreamConnectionsFrom,
  };
}

interface WaitingTurn {
  start: () => void;
  timer: NodeJS.Timeout;
}

export function createUpstreamClient(options: UpstreamClientOptions): UpstreamClient {
  const origin = new URL(options.baseUrl).origin;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_UPSTREAM_MAX_RESPONSE_BYTES;
  const connections = options.connections ?? DEFAULT_UPSTREAM_CONNECTIONS;
  const queueTimeoutMs = options.queueTimeoutMs ?? DEFAULT_UPSTREAM_QUEUE_TIMEOUT_MS;
  const retryAfterSeconds = options.retryAfterSeconds ?? DEFAULT_OVERLOAD_RETRY_AFTER_SECONDS;
  const pool = new Pool(origin, {
    connections,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    connectTimeout: Math.min(options.timeoutMs, 10_000),
  });
  let running = 0;
  // In arrival order; a Set so that a request whose wait expired leaves it at once.
  const waiting = new Set<WaitingTurn>();
  options.reportConnectionsFrom?.(connections, () => running);

  function endTurn(): void {
    running -= 1;
    const [next] = waiting;
    if (next === undefined) return;
    waiting.delete(next);
    clearTimeout(next.timer);
    next.start();
  }

  /** Runs `exchange` now if a connection is free, else once one is; fails if that takes too long. */
  function inTurn<T>(exchange: () => Promise<T>): Promise<T> {
    const run = () => {
      running += 1;
      return exchange().finally(endTurn);
    };
    if (running < connections) return run();
    return new Promise<T>((resolve, reject) => {
      const turn: WaitingTurn = {
        start: () => {
          run().then(resolve, reject);
        },
        timer: setTimeout(() => {
          waiting.delete(turn);
          options.onQueueTimeout?.();
          reject(
            gatewayError('upstream_queue_full', { headers: { 'retry-after': String(retryAfterSeconds) } }),
          );
        }, queueTimeoutMs),
      };
      waiting.add(turn);
    });
  }

  function exchangeOnce(request: UpstreamRequest): Promise<UpstreamResponse> {
    return new Promise((resolve, reject) => {
      const exchange = new Exchange(maxResponseBytes, (outcome) => {
        clearTimeout(deadline);
        if (outcome instanceof GatewayError) reject(outcome);
        else resolve(outcome);
      });
      // Bounds the whole exchange, not just each gap between bytes (undici's own timeouts). Cleared as
      // soon as the exchange settles: a timer that outlived it would hold it in memory for the whole
      // timeout (docs/performance.md).
      const deadline = setTimeout(() => {
        exchange.fail(upstreamTimedOut());
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
    send: (request) => inTurn(() => exchangeOnce(request)),
    close: () => pool.close(),
    destroy: () => pool.destroy(),
  };
}
