// The gengate process: reads the configuration, starts the gateway, the admin server and (for the demo)
// the built-in simulator, and owns signals and exit codes. Everything else is built in src/app.ts.
import { dirname } from 'node:path';
import pino from 'pino';
import { buildAdminApp } from './admin/app.ts';
import { createReadiness } from './admin/readiness.ts';
import { buildApp } from './app.ts';
import { EXIT_CANNOT_LISTEN, EXIT_INVALID } from './cli/exit-codes.ts';
import { cannotListenMessage, unresolvableHostReason, type ListenAddress } from './cli/listen-failure.ts';
import { gengateVersion } from './cli/arguments.ts';
import { readStartOptions } from './cli/start-options.ts';
import { createTenantDirectory } from './auth/tenant-directory.ts';
import { createCredentialStore } from './config/credentials.ts';
import { tenantConfigHash } from './config/identity.ts';
import { keyExpiryWarnings } from './config/key-expiry.ts';
import { ConfigError, loadConfig } from './config/load.ts';
import type { GatewayConfig } from './config/schema.ts';
import { assertTenantsReloadable, sectionsNeedingRestart, watchConfig } from './config/reload.ts';
import { createMetrics } from './observability/metrics.ts';
import { startTenantCountersAtZero } from './gateway/tenant-series.ts';
import { startSimulator } from './simulator/server.ts';
import { isOverloaded } from './overload/shed-load.ts';
import { handleProcessLifecycle } from './server/lifecycle.ts';
import { openStore, storeJobOptions } from './store/open-store.ts';
import { openWebhookQueue } from './store/webhook-queue.ts';
import { openWebhookService } from './webhooks/service.ts';
import { createUpstreamClient, upstreamClientOptions } from './upstream/client.ts';
import { checkCredential, createCredentialHealth } from './upstream/credential-health.ts';

const startOptions = readStartOptions(process.argv.slice(2), process.env);
if (typeof startOptions === 'number') process.exit(startOptions);
const { configPath, configFrom } = startOptions;

/**
 * Configuration problems end the process with exit code 2 and every problem listed; a single one (a bad
 * LOG_LEVEL, say) is one line, as a mistake on the command line is.
 */
async function orExitOnConfigError<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const heading = `gengate: invalid configuration ${configPath} (from ${configFrom})`;
    const [only, ...more] = error.problems;
    if (only !== undefined && more.length === 0) {
      process.stderr.write(`${heading}: ${only.path}: ${only.message}\n`);
    } else {
      process.stderr.write(`${heading}\n`);
      for (const problem of error.problems) process.stderr.write(`  ${problem.path}: ${problem.message}\n`);
    }
    process.exit(EXIT_INVALID);
  }
}

/**
 * An address that cannot be had ends the process with one line naming it and its setting; a host that
 * does not resolve is a mistake in the file (exit 2), named by its own setting.
 */
async function orExitIfCannotListen<T>(
  section: 'server' | 'admin' | 'simulator',
  address: ListenAddress,
  listen: () => Promise<T>,
): Promise<T> {
  try {
    return await listen();
  } catch (error) {
    const hostReason = unresolvableHostReason(error);
    if (hostReason !== undefined) {
      process.stderr.write(`gengate: ${section}.host ${address.host}: ${hostReason}\n`);
      process.exit(EXIT_INVALID);
    }
    const message = cannotListenMessage(error, address, `${section}.port`);
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
// Log lines are gathered in memory and written asynchronously, LOG_BUFFER_BYTES at a time or every
// LOG_FLUSH_MS, whichever comes first: a write per line, which is what a moderate rate gave, cost more
// than building the line (docs/decisions/0065-log-lines-written-in-batches.md), and synchronous writes
// would stall every request behind a slow log reader. The drain's exit waits for them (below), pino's exit
// handler writes what is left on any other exit; a crash (SIGKILL, out of memory) loses at most the lines
// of the last LOG_FLUSH_MS. LOG_LEVEL is applied, and checked, by the loader (src/config/load.ts).
const LOG_BUFFER_BYTES = 8_192;
const LOG_FLUSH_MS = 250;
// Within the drain's margin for closing the store (src/server/lifecycle.ts), as Kubernetes' grace period
// allows for it (docs/deploy.md#sizing-the-drain).
const LOG_EXIT_WAIT_MS = 250;
const logger = pino(
  { level: config.logging.level, base: { service: 'gengate' } },
  pino.destination({ sync: false, minLength: LOG_BUFFER_BYTES, periodicFlush: LOG_FLUSH_MS }),
);
// A rotated token is checked with the upstream as soon as the upstream client exists (below).
let checkRotatedCredential: (name: string) => void = () => undefined;
logger.info(
  { config: configPath, configFrom, version: gengateVersion(), tenants: config.tenants.length },
  'gengate starting',
);
// The same warnings as check-config's, at start and on every reload.
const warnAboutKeyExpiry = (tenants: GatewayConfig['tenants']) => {
  for (const warning of keyExpiryWarnings(tenants, Date.now())) logger.warn(warning, 'tenant key expiry');
};
warnAboutKeyExpiry(config.tenants);
const credentials = await orExitOnConfigError(() =>
  createCredentialStore(config.upstream.credentials, {
    baseDir: dirname(configPath),
    logger,
    onRotated: (name) => {
      checkRotatedCredential(name);
    },
  }),
);

const simulator = config.simulator.enabled
  ? await orExitIfCannotListen('simulator', config.simulator, () =>
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
  onReload: async (next) => {
    assertTenantsReloadable(next, credentials);
    // A webhook secret that is missing or malformed refuses the file, as it stops a start: the webhooks
    // keep the secrets they had until then, and nothing else of the new file applies.
    await webhooks.updateTenants(next.tenants);
    tenants = createTenantDirectory(next.tenants);
    startTenantCountersAtZero(next.tenants, { metrics, store });
    warnAboutKeyExpiry(next.tenants);
    const restartOnly = sectionsNeedingRestart(config, next);
    if (restartOnly.length > 0)
      logger.warn({ sections: restartOnly }, 'changes outside tenants apply on restart');
  },
  logger,
  metrics,
});
const upstream = createUpstreamClient(upstreamClientOptions(config, metrics));
const credentialHealth = createCredentialHealth(metrics, Object.keys(config.upstream.credentials));
// Asked, never awaited: an upstream that is down or slow must not delay or fail start-up.
const checkUpstreamCredential = (name: string): void => {
  void checkCredential(upstream, credentialHealth, logger, name, credentials.get(name));
};
checkRotatedCredential = checkUpstreamCredential;
const gateway = buildApp(config, {
  logger,
  tenants: () => tenants,
  credentials,
  metrics,
  upstream,
  store,
  credentialHealth,
  webhooks,
});
const readiness = createReadiness({
  ...(config.store.failMode === 'closed' ? { storeAvailable: () => !store.limiter.degraded } : {}),
  overloaded: () => isOverloaded(gateway),
});
const admin = buildAdminApp({ logger, metrics, readiness, maxConnections: config.admin.maxConnections });

const { server: gatewayAddress, admin: adminAddress } = config;
// Fastify's own "Server listening" line, naming which server it is.
await orExitIfCannotListen('server', gatewayAddress, () =>
  gateway.listen({
    host: gatewayAddress.host,
    port: gatewayAddress.port,
    backlog: gatewayAddress.listenBacklog,
    listenTextResolver: (address) => `gateway listening at ${address}`,
  }),
);
await orExitIfCannotListen('admin', adminAddress, () =>
  admin.listen({
    host: adminAddress.host,
    port: adminAddress.port,
    listenTextResolver: (address) => `admin listening at ${address}`,
  }),
);
let exitingWith: number | undefined;
// Signals, uncaught failures and the drain's deadline: src/server/lifecycle.ts. Installed before the
// replica reports ready and logs it: a SIGTERM sent on that line must find the drain, not Node's default
// (which ends the process by the signal).
handleProcessLifecycle({
  logger,
  drainTimeoutMs: config.server.drainTimeoutMs,
  drain: async (deadline) => {
    readiness.markDraining();
    configWatcher.close();
    // Stop accepting at once; in-flight requests get until the deadline, then their connections are cut
    // and their upstream exchanges aborted, so the process exits within Kubernetes' grace period.
    const abortUpstream = () => void upstream.destroy();
    deadline.addEventListener('abort', abortUpstream, { once: true });
    await gateway.close();
    deadline.removeEventListener('abort', abortUpstream);
    // Webhook attempts in flight end now and are retried later, here or by another replica.
    await webhooks.close();
    await Promise.all([
      admin.close(),
      deadline.aborted ? upstream.destroy() : upstream.close(),
      store.close(),
      simulator?.close(),
    ]);
    credentials.close();
  },
  cutInFlight: () => {
    const cut = gateway.cutConnections();
    metrics.drainAborted.inc(cut);
    return cut;
  },
  exit: (code) => {
    // The first exit decides the code: a drain that ends while a second signal's exit waits for its lines
    // does not turn that exit 1 into 0.
    if (exitingWith !== undefined) return;
    exitingWith = code;
    // The last lines ('stopped' among them) leave in an asynchronous write: exiting before it is done
    // loses them, since pino's exit hook writes synchronously only what is not yet being written. So exit
    // once it is done, or after LOG_EXIT_WAIT_MS when a stalled log reader holds it up.
    process.exitCode = code;
    setTimeout(() => process.exit(code), LOG_EXIT_WAIT_MS);
    logger.flush(() => process.exit(code));
  },
});
readiness.markReady();
for (const name of Object.keys(config.upstream.credentials)) checkUpstreamCredential(name);
logger.info(
  { gateway: gateway.server.address(), admin: admin.server.address(), simulator: simulator?.url },
  'gengate is ready',
);
// The start-up lines are written now, not with the first batch: whatever waits for readiness reads them.
logger.flush();
