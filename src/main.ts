// The gengate process: reads the configuration, starts the gateway, the admin server and (for the demo)
// the built-in simulator, and owns signals and exit codes. Everything else is built in src/app.ts.
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { buildAdminApp } from './admin/app.ts';
import { createReadiness } from './admin/readiness.ts';
import { buildApp } from './app.ts';
import { EXIT_CANNOT_LISTEN, EXIT_INVALID } from './cli/exit-codes.ts';
import { cannotListenMessage, type ListenAddress } from './cli/listen-failure.ts';
import { createTenantDirectory } from './auth/tenant-directory.ts';
import { createCredentialStore } from './config/credentials.ts';
import { tenantConfigHash } from './config/identity.ts';
import { ConfigError, loadConfig } from './config/load.ts';
import { assertTenantsReloadable, sectionsNeedingRestart, watchConfig } from './config/reload.ts';
import { createMetrics } from './observability/metrics.ts';
import { startTenantCountersAtZero } from './gateway/tenant-series.ts';
import { startSimulator } from './simulator/server.ts';
import { isOverloaded } from './overload/shed-load.ts';
import { openStore, storeJobOptions } from './store/open-store.ts';
import { openWebhookQueue } from './store/webhook-queue.ts';
import { openWebhookService } from './webhooks/service.ts';
import { createUpstreamClient, upstreamClientOptions } from './upstream/client.ts';

const DEMO_CONFIG_PATH = 'config/demo.yaml';
// Below Kubernetes' default 30 s grace period, so in-flight requests finish before SIGKILL.
const DRAIN_TIMEOUT_MS = 25_000;

const { values: args } = parseArgs({ options: { config: { type: 'string' } }, strict: true });
const configPath = resolve(args.config ?? process.env.GENGATE_CONFIG ?? DEMO_CONFIG_PATH);

/** Configuration problems end the process with exit code 2 and every problem listed. */
async function orExitOnConfigError<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`gengate: invalid configuration ${configPath}\n`);
    for (const problem of error.problems) process.stderr.write(`  ${problem.path}: ${problem.message}\n`);
    process.exit(EXIT_INVALID);
  }
}

/** An address that cannot be had ends the process with one line naming it and its setting. */
async function orExitIfCannotListen<T>(
  setting: string,
  address: ListenAddress,
  listen: () => Promise<T>,
): Promise<T> {
  try {
    return await listen();
  } catch (error) {
    const message = cannotListenMessage(error, address, setting);
    if (message === undefined) throw error;
    process.stderr.write(`gengate: ${message}\n`);
    process.exit(EXIT_CANNOT_LISTEN);
  }
}

// The environment as it was at start-up: a reload reads the file again, never a changed environment.
const startupEnv = Object.freeze({ ...process.env });
// At start every credential is checked too, so that one run lists every problem; a reload leaves the
// files to the credential store, which follows them.
const config = await orExitOnConfigError(() => loadConfig(configPath, startupEnv, 'all'));
// Log lines are written asynchronously (a synchronous write per request was 4% of the CPU profile;
// synchronous 4 KB writes would stall every request behind a slow log reader, docs/performance.md);
// shutdown flushes them.
const logger = pino(
  { level: process.env.LOG_LEVEL ?? config.logging.level, base: { service: 'gengate' } },
  pino.destination({ sync: false }),
);
const credentials = await orExitOnConfigError(() =>
  createCredentialStore(config.upstream.credentials, { baseDir: dirname(configPath), logger }),
);

const simulator = config.simulator.enabled
  ? await orExitIfCannotListen('simulator.port', config.simulator, () =>
      startSimulator({
        host: config.simulator.host,
        port: config.simulator.port,
        tokens: Object.keys(config.upstream.credentials).map((name) => ({
          name,
          token: credentials.get(name),
        })),
        queuedMs: config.simulator.queuedMs,
        processingMs: config.simulator.processingMs,
        requestsPerMinute: config.simulator.requestsPerMinute,
      }),
    )
  : undefined;

const metrics = createMetrics();
const store = await openStore(config.store, { logger, metrics, jobs: storeJobOptions(config) });
// Completion webhooks: every job's end is queued for its tenant's webhooks before the tracker lets go of it.
const webhooks = await orExitOnConfigError(() =>
  openWebhookService({
    webhooks: config.webhooks,
    openQueue: (step) => openWebhookQueue(config.store, step),
    tenants: config.tenants,
    registry: metrics.registry,
    env: startupEnv,
    baseDir: dirname(configPath),
    logger,
  }),
);
store.jobEnds.listen((end) => webhooks.onJobEnded(end));
startTenantCountersAtZero(config.tenants, { metrics, store });
metrics.configApplied(tenantConfigHash(config.tenants));
metrics.reportMaxReplicas(config.store.replicas);
let tenants = createTenantDirectory(config.tenants);
// Tenants, keys, policies and limits apply to the next request; a request in flight keeps the tenant it
// authenticated as. Everything else in the file needs a restart (see docs/configuration.md).
const configWatcher = watchConfig({
  path: configPath,
  load: () => loadConfig(configPath, startupEnv),
  onReload: (next) => {
    assertTenantsReloadable(next, credentials);
    tenants = createTenantDirectory(next.tenants);
    startTenantCountersAtZero(next.tenants, { metrics, store });
    webhooks.updateTenants(next.tenants).catch((error: unknown) => {
      logger.warn({ err: error }, 'webhook secrets of the new configuration unusable; keeping the last ones');
    });
    const restartOnly = sectionsNeedingRestart(config, next);
    if (restartOnly.length > 0)
      logger.warn({ sections: restartOnly }, 'changes outside tenants apply on restart');
  },
  logger,
  metrics,
});
const upstream = createUpstreamClient(upstreamClientOptions(config, metrics));
const gateway = buildApp(config, {
  logger,
  tenants: () => tenants,
  credentials,
  metrics,
  upstream,
  store,
  webhooks,
});
const readiness = createReadiness({
  ...(config.store.failMode === 'closed' ? { storeAvailable: () => !store.limiter.degraded } : {}),
  overloaded: () => isOverloaded(gateway),
});
const admin = buildAdminApp({ logger, metrics, readiness });

const { server: gatewayAddress, admin: adminAddress } = config;
await orExitIfCannotListen('server.port', gatewayAddress, () =>
  gateway.listen({ host: gatewayAddress.host, port: gatewayAddress.port }),
);
await orExitIfCannotListen('admin.port', adminAddress, () =>
  admin.listen({ host: adminAddress.host, port: adminAddress.port }),
);
readiness.markReady();
logger.info(
  { gateway: gateway.server.address(), admin: admin.server.address(), simulator: simulator?.url },
  'gengate is ready',
);

let shuttingDown = false;
async function shutDown(signal: string): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  logger.info({ signal }, 'draining');
  readiness.markDraining();
  configWatcher.close();
  // Stop accepting at once; in-flight requests get until the deadline, then their sockets are closed
  // and their upstream exchanges aborted, so the process exits within Kubernetes' grace period.
  const drain = { expired: false };
  const deadline = setTimeout(() => {
    drain.expired = true;
    gateway.server.closeAllConnections();
    void upstream.destroy();
  }, DRAIN_TIMEOUT_MS);
  await gateway.close();
  clearTimeout(deadline);
  // Webhook attempts in flight end now and are retried later, here or by another replica.
  await webhooks.close();
  await Promise.all([
    admin.close(),
    drain.expired ? upstream.destroy() : upstream.close(),
    store.close(),
    simulator?.close(),
  ]);
  credentials.close();
  logger.info('stopped');
  logger.flush();
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    shutDown(signal).then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}
