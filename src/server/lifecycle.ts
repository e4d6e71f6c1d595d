// How the process ends (docs/reliability.md), in the manner of close-with-grace: the first SIGTERM or
// SIGINT drains; an uncaught exception or an unhandled rejection is logged and drains the same way, then
// exits 1 (the process may be in a state nobody planned for, so it serves its requests in flight and
// leaves); a second signal or failure during the drain exits 1 at once; a drain that outlives its deadline
// has what is left cut, gets a short margin to close the store and its connections, and exits 1 whether
// or not it finished. Every way out is logged. Only src/main.ts calls it: nothing else knows the process.
import type { Logger } from 'pino';

// What closing the store, the admin server and the upstream pool may take once the deadline has cut the
// requests still in flight. The chart's terminationGracePeriodSeconds leaves room for it
// (helm/gengate/templates/deployment.yaml).
export const DRAIN_CLOSE_MARGIN_MS = 2_000;

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const DRAIN_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** The events of `process` this module listens to. */
export interface ProcessEvents {
  on(event: (typeof DRAIN_SIGNALS)[number], listener: () => void): unknown;
  on(event: 'uncaughtException' | 'unhandledRejection', listener: (error: unknown) => void): unknown;
}

export interface LifecycleOptions {
  logger: Pick<Logger, 'info' | 'warn' | 'error' | 'fatal'>;
  drainTimeoutMs: number;
  /** Stops accepting, lets requests in flight finish and closes everything; `deadline` fires when time is up. */
  drain(deadline: AbortSignal): Promise<void>;
  /** Cuts what is still in flight once the deadline has passed; returns how many requests it cut. */
  cutInFlight(): number;
  /** process.exit in production. */
  exit(code: number): void;
  /** Where signals and failures come from: `process` in production. */
  events?: ProcessEvents;
}

export function handleProcessLifecycle(options: LifecycleOptions): void {
  const { logger, drainTimeoutMs } = options;
  const exit = (code: number) => {
    options.exit(code);
  };
  const events = options.events ?? process;
  let draining = false;
  let failed = false;

  function begin(reason: string): void {
    draining = true;
    const deadline = new AbortController();
    let hardStop: NodeJS.Timeout | undefined;
    const deadlineTimer = setTimeout(() => {
      const cut = options.cutInFlight();
      logger.error({ drainTimeoutMs, aborted: cut }, 'drain deadline passed; requests still in flight cut');
      deadline.abort();
      hardStop = setTimeout(() => {
        logger.fatal({ marginMs: DRAIN_CLOSE_MARGIN_MS }, 'shutdown did not finish after the drain deadline');
        exit(EXIT_FAILED);
      }, DRAIN_CLOSE_MARGIN_MS);
    }, drainTimeoutMs);
    options.drain(deadline.signal).then(
      () => {
        clearTimeout(deadlineTimer);
        clearTimeout(hardStop);
        const code = failed || deadline.signal.aborted ? EXIT_FAILED : EXIT_OK;
        logger.info({ reason, exitCode: code }, 'stopped');
        exit(code);
      },
      (error: unknown) => {
        clearTimeout(deadlineTimer);
        clearTimeout(hardStop);
        logger.error({ err: error }, 'shutdown failed');
        exit(EXIT_FAILED);
      },
    );
  }

  function onSignal(signal: string): void {
    if (draining) {
      logger.error({ signal }, 'second signal during the drain; exiting at once');
      exit(EXIT_FAILED);
      return;
    }
    logger.info({ signal }, 'draining');
    begin(signal);
  }

  function onFailure(kind: 'uncaught exception' | 'unhandled rejection', error: unknown): void {
    failed = true;
    if (draining) {
      logger.fatal({ err: error }, `${kind} during the drain; exiting at once`);
      exit(EXIT_FAILED);
      return;
    }
    logger.fatal({ err: error }, `${kind}; draining, then exiting with 1`);
    begin(kind);
  }

  for (const signal of DRAIN_SIGNALS) {
    events.on(signal, () => {
      onSignal(signal);
    });
  }
  events.on('uncaughtException', (error) => {
    onFailure('uncaught exception', error);
  });
  events.on('unhandledRejection', (reason) => {
    onFailure('unhandled rejection', reason);
  });
}
