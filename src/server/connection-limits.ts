// Bounds on connections (docs/reliability.md), for the gateway and the admin
// server alike: at most `maxConnections` open at once, beyond which Node closes each new one as soon as
// it is accepted (a client sees its connection end before any request, which a balancer retries
// elsewhere), counted in gengate_connections_refused_total{server} and logged. Out of file descriptors,
// libuv accepts and closes new connections by itself; when Node does report a failed accept (EMFILE,
// ENFILE) it is an 'error' of the server, which nothing listened to, so it became an uncaught exception
// and killed the process with every connection it was serving: here it is counted
// (gengate_file_descriptors_exhausted_total) and logged instead. Log lines come at most once per
// LOG_EVERY_MS, with how many since the last.
import type { Logger } from 'pino';
import type { Server } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { GatewayMetrics } from '../observability/metrics.ts';

// A flood refuses thousands of connections a second: one log line for a burst is enough.
const LOG_EVERY_MS = 10_000;
// Errors that say the process (or the system) has no descriptor to give.
const OUT_OF_DESCRIPTORS = new Set(['EMFILE', 'ENFILE']);

export function isOutOfDescriptors(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && OUT_OF_DESCRIPTORS.has(code);
}

/** Calls `log(count)` with the number of events since the last call, at most once per LOG_EVERY_MS. */
export function rateLimitedLog(log: (count: number) => void): () => void {
  let unlogged = 0;
  let loggedAtMs = Number.NEGATIVE_INFINITY;
  return () => {
    unlogged += 1;
    const now = performance.now();
    if (now - loggedAtMs < LOG_EVERY_MS) return;
    loggedAtMs = now;
    log(unlogged);
    unlogged = 0;
  };
}

export interface ConnectionLimitsOptions {
  /** `gateway` or `admin`: the metric's label and the log's. */
  name: 'gateway' | 'admin';
  maxConnections: number;
  logger: Pick<Logger, 'warn' | 'error'>;
  metrics: Pick<GatewayMetrics, 'connectionsRefused' | 'descriptorsExhausted'>;
}

export function limitConnections(server: Server, options: ConnectionLimitsOptions): void {
  const { name, maxConnections, logger, metrics } = options;
  server.maxConnections = maxConnections;
  const logRefused = rateLimitedLog((refused) => {
    logger.warn(
      { server: name, maxConnections, refused },
      'connection limit reached; new connections closed',
    );
  });
  const logOutOfDescriptors = rateLimitedLog((failures) => {
    logger.warn({ server: name, failures }, 'out of file descriptors; new connections closed');
  });
  server.on('drop', () => {
    metrics.connectionsRefused.inc({ server: name });
    logRefused();
  });
  // Only once listening: an error while starting to listen (the port taken) is listen()'s to report.
  server.once('listening', () => {
    server.on('error', (error) => {
      if (!isOutOfDescriptors(error)) {
        logger.error({ server: name, err: error }, 'server error; still serving');
        return;
      }
      metrics.descriptorsExhausted.inc();
      logOutOfDescriptors();
    });
  });
}
