// The one way requests leave gengate. Each exchange is read whole (bounded in time and size) before the
// client is answered, so a stalled or broken upstream becomes a clean 502/504 instead of a torn response.
import type { IncomingHttpHeaders } from 'node:http';
import { Pool } from 'undici';
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
  const { code, name } = error as { code?: unknown; name?: unknown };
  return typeof code === 'string' ? code : typeof name === 'string' ? name : undefined;
}

/** Transport failures, translated once: timeouts are 504, everything else (refused, reset, …) 502. */
function translateUpstreamFailure(error: unknown): GatewayError {
  const code = errorCode(error);
  if (code !== undefined && (TIMEOUT_CODES.has(code) || code === 'TimeoutError')) {
    return gatewayError('upstream_timeout', 'the generation service did not answer in time', {
      cause: error,
    });
  }
  return gatewayError('upstream_unavailable', 'the generation service could not be reached', {
    cause: error,
  });
}

async function readBounded(body: AsyncIterable<Buffer>, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) {
      throw gatewayError(
        'upstream_unavailable',
        'the generation service sent a response larger than allowed',
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
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
    async send(request) {
      // Bounds the whole exchange, not just each gap between bytes. Not AbortSignal.timeout(): its timer
      // outlives the exchange by the whole timeout, so at a few thousand requests per second a minute's
      // worth of timers and signals would be held in memory (docs/performance.md).
      const controller = new AbortController();
      const deadline = setTimeout(() => {
        controller.abort(new DOMException('the upstream exchange timed out', 'TimeoutError'));
      }, options.timeoutMs);
      try {
        const response = await pool.request({
          method: request.method,
          path: request.path,
          headers: request.headers,
          body: request.body ?? null,
          signal: controller.signal,
        });
        const body = await readBounded(response.body, maxResponseBytes);
        if (response.statusCode < 200 || response.statusCode > 599) {
          throw gatewayError('upstream_unavailable', 'the generation service sent an invalid status');
        }
        return { status: response.statusCode, headers: response.headers, body };
      } catch (error) {
        if (error instanceof GatewayError) throw error;
        throw translateUpstreamFailure(error);
      } finally {
        clearTimeout(deadline);
      }
    },
    close: () => pool.close(),
    destroy: () => pool.destroy(),
  };
}
