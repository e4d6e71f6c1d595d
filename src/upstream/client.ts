// The one way requests leave gengate. Each exchange is read whole (bounded in time and size) before the
// client is answered, so a stalled or broken upstream becomes a clean 502/504 instead of a torn response.
import type { IncomingHttpHeaders } from 'node:http';
import { Pool, type Dispatcher } from 'undici';
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
}

// Results may carry base64 images: 20 samples of a few MB each fit comfortably.
const DEFAULT_MAX_UPSTREAM_RESPONSE_BYTES = 64 * 1024 * 1024;

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code } = error as { code?: unknown };
  return typeof code === 'string' ? code : undefined;
}

function upstreamTimedOut(cause?: unknown): GatewayError {
  return gatewayError('upstream_timeout', 'the generation service did not answer in time', { cause });
}

/** Transport failures, translated once: timeouts are 504, everything else (refused, reset, …) 502. */
function translateUpstreamFailure(error: unknown): GatewayError {
  const code = errorCode(error);
  if (code !== undefined && TIMEOUT_CODES.has(code)) return upstreamTimedOut(error);
  return gatewayError('upstream_unavailable', 'the generation service could not be reached', {
    cause: error,
  });
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
      this.fail(gatewayError('upstream_unavailable', 'the generation service sent an invalid status'));
      return;
    }
    this.#status = status;
    this.#headers = headers;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#size += chunk.length;
    if (this.#size > this.#maxBytes) {
      this.fail(
        gatewayError('upstream_unavailable', 'the generation service sent a response larger than allowed'),
      );
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

export function createUpstreamClient(options: UpstreamClientOptions): UpstreamClient {
  const origin = new URL(options.baseUrl).origin;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_UPSTREAM_RESPONSE_BYTES;
  const pool = new Pool(origin, {
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    connectTimeout: Math.min(options.timeoutMs, 10_000),
  });

  return {
    send(request) {
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
    },
    close: () => pool.close(),
    destroy: () => pool.destroy(),
  };
}
