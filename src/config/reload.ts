// Reloads the configuration without a restart: on SIGHUP and whenever the file is replaced whole, by a
// rename or a mounted ConfigMap's symlink swap (docs/configuration.md). A write in place is not applied by
// the watcher: a reader can see it half-written, and a prefix that still parses was applied (video
// allowed, a samples cap bypassed, every key refused); the log says to replace the file instead or send
// SIGHUP. A file that does not load is refused: its problems are logged and counted, and the caller keeps
// the configuration it has.
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { tenantConfigHash } from './identity.ts';
import { ConfigError, formatPath, type ConfigProblem } from './problems.ts';
import type { GatewayConfig } from './schema.ts';
import { watchFileReplacements } from './watch-file.ts';

const DEFAULT_CONFIG_RELOAD_DEBOUNCE_MS = 200;
const DEFAULT_CONFIG_POLL_INTERVAL_MS = 5_000;
const RELOAD_SIGNAL = 'SIGHUP';

/** Where SIGHUP comes from: `process` in production, any emitter in tests. */
export interface SignalSource {
  on(signal: typeof RELOAD_SIGNAL, listener: () => void): unknown;
  off(signal: typeof RELOAD_SIGNAL, listener: () => void): unknown;
}

export interface ConfigWatcherOptions {
  path: string;
  /** Reads and validates the file, e.g. `() => loadConfig(path, process.env)`; rejects when it is invalid. */
  load: () => Promise<GatewayConfig>;
  /** Receives each valid new configuration; throwing (or rejecting) refuses it like an invalid file. */
  onReload: (config: GatewayConfig) => void | Promise<void>;
  /** Told about each refused reload, after it is logged and counted. */
  onError?: (error: unknown) => void;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** gengate_config_reloads_total and the configuration's identity (src/observability/metrics.ts). */
  metrics: {
    configReloads: Counter<'result'>;
    configApplied(hash: string): void;
    configRefused(): void;
  };
  signals?: SignalSource;
  debounceMs?: number;
  pollIntervalMs?: number;
}

export type ReloadResult = 'success' | 'error';

export interface ConfigWatcher {
  /** Reloads now. A reload asked for while one runs waits for it; any further asks share that one. */
  reload(): Promise<ReloadResult>;
  /** Stops watching the file and listening for SIGHUP. */
  close(): void;
}

export function watchConfig(options: ConfigWatcherOptions): ConfigWatcher {
  const { path, load, onReload, onError, logger, metrics } = options;

  const reloadOnce = async (): Promise<ReloadResult> => {
    try {
      const config = await load();
      await onReload(config);
      metrics.configReloads.inc({ result: 'success' });
      metrics.configApplied(tenantConfigHash(config.tenants));
      logger.info({ path, tenants: config.tenants.length }, 'configuration reloaded');
      return 'success';
    } catch (error) {
      metrics.configReloads.inc({ result: 'error' });
      metrics.configRefused();
      const reason = error instanceof ConfigError ? { problems: error.problems } : { err: error };
      logger.error({ path, ...reason }, 'configuration reload refused; keeping the current configuration');
      onError?.(error);
      return 'error';
    }
  };

  // One reload at a time, and at most one waiting: it reads the file after every change seen so far.
  let running: Promise<ReloadResult> | undefined;
  let waiting: Promise<ReloadResult> | undefined;
  const start = (): Promise<ReloadResult> => {
    const run = reloadOnce().finally(() => {
      running = undefined;
    });
    running = run;
    return run;
  };
  const reload = (): Promise<ReloadResult> => {
    if (waiting !== undefined) return waiting;
    if (running === undefined) return start();
    waiting = running.then(() => {
      waiting = undefined;
      return start();
    });
    return waiting;
  };

  const reloadInBackground = () => void reload();
  const signals = options.signals ?? process;
  signals.on(RELOAD_SIGNAL, reloadInBackground);
  const stopWatching = watchFileReplacements(
    path,
    {
      debounceMs: options.debounceMs ?? DEFAULT_CONFIG_RELOAD_DEBOUNCE_MS,
      pollIntervalMs: options.pollIntervalMs ?? DEFAULT_CONFIG_POLL_INTERVAL_MS,
    },
    {
      onReplaced: reloadInBackground,
      onWrittenInPlace: () => {
        logger.warn(
          { path },
          'configuration file written in place; not applied: write the new file beside it and rename it ' +
            'over this one (mv), or send SIGHUP once it is written',
        );
      },
    },
  );

  return {
    reload,
    close() {
      signals.off(RELOAD_SIGNAL, reloadInBackground);
      stopWatching();
    },
  };
}

/**
 * What a reload would refuse in `next`, given the credentials the running process holds. A reload changes
 * tenants only; the rest of the file is read at start-up. A new file whose tenants use an upstream
 * credential the running process does not hold cannot be applied without a restart. The running gateway
 * and `check-config --against` ask this same question.
 */
export function reloadRefusals(
  next: GatewayConfig,
  credentials: { has(name: string): boolean },
): ConfigProblem[] {
  return next.tenants.flatMap((tenant, index) =>
    credentials.has(tenant.credential)
      ? []
      : [
          {
            path: formatPath(['tenants', index, 'credential']),
            message: `credential "${tenant.credential}" is new: a reload refuses it, upstream credentials change only on restart`,
          },
        ],
  );
}

/** Throws the refusals of reloadRefusals, so the watcher refuses the file like an invalid one. */
export function assertTenantsReloadable(
  next: GatewayConfig,
  credentials: { has(name: string): boolean },
): void {
  const refusals = reloadRefusals(next, credentials);
  if (refusals.length > 0) throw new ConfigError(refusals);
}

/** The top-level sections, other than tenants, that differ between two configurations. */
export function sectionsNeedingRestart(running: GatewayConfig, next: GatewayConfig): string[] {
  return (Object.keys(running) as (keyof GatewayConfig)[]).filter(
    (section) => section !== 'tenants' && JSON.stringify(running[section]) !== JSON.stringify(next[section]),
  );
}
