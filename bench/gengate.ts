// gengate with every feature on: a configuration file written for the run (one tenant, a policy that
// leaves the benchmark body untouched, two rate limits on the run's Redis, budgets, webhooks, metrics,
// info-level logs to a file) and the process started from the very Node that runs the benchmark; the
// feature ladder (bench/feature-costs.ts) turns the features off one by one. With --against, another git
// revision of gengate is compiled too, to run with the same configuration.
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { PROXY_CORE, freePort, spawnPinned, waitUntil, type BenchProcess } from './processes.ts';
import { WEBHOOK_PATH } from './request-body.ts';

const START_TIMEOUT_MS = 15_000;
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const TENANT_KEY_RANDOM_CHARACTERS = 40;
const TENANT_KEY_PREFIX_LENGTH = 8;
// A million units a second: beyond any run on loopback, so every request pays for the Redis round trip
// and none is refused, yet within the limiter's exact arithmetic (limit × window <= 2^52 µs).
const LIMIT_WINDOW_SECONDS = 60;
const UNREACHABLE_LIMIT = 60_000_000;
// Budgets and caps on jobs in flight are on, beyond anything a run spends or keeps in flight: each create
// is still priced, checked and reserved in its one store round trip (docs/budgets.md).
const UNREACHABLE_BUDGET_USD = 1_000_000_000;
const UNREACHABLE_JOBS_IN_FLIGHT = 1_000_000_000;
const UNREACHED_QUEUE_WAIT_MS = 10_000;
const UPSTREAM_TOKEN_ENV = 'BENCH_UPSTREAM_TOKEN';
// Webhooks are configured for the benchmark tenant, to the static upstream (which accepts them): the
// queue and its worker run beside the requests, and every job that ends is delivered.
const WEBHOOK_SECRET_ENV = 'BENCH_WEBHOOK_SECRET';
const WEBHOOK_SECRET_BYTES = 32;
const LOOPBACK_CIDR = '127.0.0.0/8';
// gengate as deployed (README, "Deployment"): compiled by `npm run build`, which `npm run bench` runs first.
const GENGATE_MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const REPOSITORY = fileURLToPath(new URL('..', import.meta.url));
const TYPESCRIPT_COMPILER = join('node_modules', 'typescript', 'bin', 'tsc');
const SHORT_COMMIT_LENGTH = 12;
/**
 * The V8 settings of the deployment command (README, "Deployment"): a young generation of 2 × 16 MB
 * instead of the default that grows to 2 × 64 MB on a large machine, and an old generation that may grow
 * to 1.5 × what survived its last collection instead of a factor V8 picks from the collector's speed (up
 * to 4 ×, so RSS under the same load ranged from 165 to 223 MB from run to run); docs/performance.md. The
 * bare proxy and the floor run with the same flags, so the Node processes differ only in what they do.
 */
export const PRODUCTION_NODE_FLAGS = ['--max-semi-space-size=16', '--heap-growing-percent=50'] as const;

export interface BenchGengate {
  process: BenchProcess;
  port: number;
  adminPort: number;
  /** The Authorization header of the benchmark tenant. */
  authorization: string;
  logFile: string;
  /** The configuration's paths this build does not know, left out (another build's only). */
  leftOutOfConfig: string[];
}

function newTenantKey(): string {
  let key = 'ggk_';
  for (let index = 0; index < TENANT_KEY_RANDOM_CHARACTERS; index++)
    key += BASE62.charAt(randomInt(BASE62.length));
  return key;
}

/**
 * The features a configuration turns on, each of which `node bench/feature-costs.ts` removes in turn to
 * price it. `npm run bench` runs with every one.
 */
export interface BenchFeatures {
  /** A webhook for every end of the tenant's jobs, delivered through the queue and its worker. */
  webhooks: boolean;
  /** A daily and a monthly budget for the tenant, caps on its jobs in flight and its credential's. */
  budgets: boolean;
  /** Two rate limits, each charged in the store. */
  rateLimits: boolean;
  /** A policy with every rule; without it, the default policy (the upstream's own maxima). */
  policy: boolean;
  /** The request's log line (info level); without it, only warnings are logged. */
  requestLog: boolean;
  /** Redis as the store; without it, the in-memory store of a single replica. */
  redisStore: boolean;
}

export const EVERY_FEATURE: BenchFeatures = {
  webhooks: true,
  budgets: true,
  rateLimits: true,
  policy: true,
  requestLog: true,
  redisStore: true,
};

/** What each step of the feature ladder removes, in order: its name and what it turns off. */
export const FEATURE_LADDER: readonly { removes: keyof BenchFeatures; label: string }[] = [
  { removes: 'webhooks', label: 'completion webhooks' },
  { removes: 'budgets', label: 'budgets and caps on jobs in flight' },
  { removes: 'rateLimits', label: 'rate limits' },
  { removes: 'policy', label: 'the policy rules (the defaults remain)' },
  { removes: 'requestLog', label: 'the request log line' },
  { removes: 'redisStore', label: 'Redis as the store (memory instead)' },
];

/**
 * Every feature, then the same with each step of FEATURE_LADDER removed on top of the steps before it:
 * the difference between two neighbours is what the step's feature costs, and the differences add up to
 * the whole of gengate's features.
 */
export function featureSteps(): { removed: string | undefined; features: BenchFeatures }[] {
  const steps: { removed: string | undefined; features: BenchFeatures }[] = [
    { removed: undefined, features: EVERY_FEATURE },
  ];
  for (const { removes, label } of FEATURE_LADDER) {
    const before = steps.at(-1)!.features;
    steps.push({ removed: label, features: { ...before, [removes]: false } });
  }
  return steps;
}

export function configFor(options: {
  port: number;
  adminPort: number;
  upstreamUrl: string;
  redisUrl: string;
  key: string;
  commandTimeoutMs: number | undefined;
  features: BenchFeatures;
}) {
  const { features } = options;
  return {
    // The closed loop saturates the proxy by design, and the allocation sampler slows it further: a
    // request may wait past the 250 ms at which a deployed replica sheds it (test/faults/flood.test.ts
    // measures that). A bound no run reaches keeps the watcher, and its cost, in the figures.
    server: { host: '127.0.0.1', port: options.port, overload: { maxQueueWaitMs: UNREACHED_QUEUE_WAIT_MS } },
    admin: { host: '127.0.0.1', port: options.adminPort },
    logging: { level: features.requestLog ? 'info' : 'warn', prompts: false },
    upstream: {
      baseUrl: options.upstreamUrl,
      credentials: {
        shared: {
          env: UPSTREAM_TOKEN_ENV,
          ...(features.budgets ? { maxJobsInFlight: UNREACHABLE_JOBS_IN_FLIGHT } : {}),
        },
      },
    },
    pricing: { images: [{ model: '*', usdPerSample: 0.01 }] },
    webhooks: { allowedDestinations: [LOOPBACK_CIDR], allowHttp: [LOOPBACK_CIDR] },
    store: features.redisStore
      ? {
          kind: 'redis',
          redis: {
            url: options.redisUrl,
            ...(options.commandTimeoutMs === undefined ? {} : { commandTimeoutMs: options.commandTimeoutMs }),
          },
          failMode: 'open',
        }
      : { kind: 'memory' },
    tenants: [
      {
        id: 'bench',
        credential: 'shared',
        keys: [
          {
            sha256: createHash('sha256').update(options.key).digest('hex'),
            prefix: options.key.slice(0, TENANT_KEY_PREFIX_LENGTH),
            label: 'bench',
          },
        ],
        ...(features.budgets
          ? {
              budget: { dailyUsd: UNREACHABLE_BUDGET_USD, monthlyUsd: UNREACHABLE_BUDGET_USD },
              jobs: { maxInFlight: UNREACHABLE_JOBS_IN_FLIGHT },
            }
          : {}),
        ...(features.webhooks
          ? {
              webhooks: [
                {
                  id: 'bench',
                  url: `${options.upstreamUrl}${WEBHOOK_PATH}`,
                  secret: { env: WEBHOOK_SECRET_ENV },
                  events: ['job.completed', 'job.failed', 'job.cancelled', 'job.expired'],
                },
              ],
            }
          : {}),
        // Every rule is present and the benchmark body satisfies each one, so nothing is rewritten.
        ...(features.policy
          ? {
              policy: {
                mode: 'enforce',
                safetyLevel: { minimum: 'medium', onViolation: 'raise' },
                samples: { maximum: 4, onViolation: 'clamp' },
                steps: { maximum: 30, onViolation: 'clamp' },
                models: { allow: ['vendor@*'] },
                scanResults: { require: true },
                outputTypes: ['url'],
                video: { enabled: true, maxDurationSeconds: 10 },
              },
            }
          : {}),
        limits: features.rateLimits
          ? [
              {
                id: 'images',
                routes: ['images.create'],
                cost: 'samples',
                limit: UNREACHABLE_LIMIT,
                windowSeconds: 60,
              },
              {
                id: 'requests',
                routes: ['*'],
                cost: 'requests',
                limit: UNREACHABLE_LIMIT,
                windowSeconds: LIMIT_WINDOW_SECONDS,
              },
            ]
          : [],
      },
    ],
  };
}

async function isReady(adminPort: number): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${adminPort}/readyz`);
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

/** Another revision of gengate, compiled. */
export interface OtherBuild {
  /** The revision as given, e.g. `main` or `HEAD~1`. */
  ref: string;
  commit: string;
  /** Its compiled entry point, to give startGengate. */
  main: string;
  /** Its compiled configuration schema, to give startGengate. */
  configSchema: string;
}

/** The part of a JSON schema that says which keys an object may have. */
interface KeysSchema {
  properties?: Record<string, KeysSchema>;
  patternProperties?: Record<string, KeysSchema>;
  additionalProperties?: unknown;
  required?: string[];
  items?: KeysSchema;
  anyOf?: KeysSchema[];
}

/**
 * `value` without what `schema` does not know (a section added after the revision whose schema it is),
 * each path left out added to `leftOut`: an older build is measured with every feature it has.
 */
function keepKnown(value: unknown, schema: KeysSchema, path: string, leftOut: Set<string>): unknown {
  if (Array.isArray(value)) {
    const { items } = schema;
    return items === undefined ? value : value.map((item) => keepKnown(item, items, `${path}[]`, leftOut));
  }
  if (typeof value !== 'object' || value === null) return value;
  if (schema.anyOf !== undefined) {
    const variant = schema.anyOf.find((each) => (each.required ?? []).every((key) => key in value));
    return variant === undefined ? value : keepKnown(value, variant, path, leftOut);
  }
  const patterned = Object.values(schema.patternProperties ?? {})[0];
  const kept: Record<string, unknown> = {};
  for (const [key, each] of Object.entries(value)) {
    const known = schema.properties?.[key] ?? patterned;
    const at = path === '' ? key : `${path}.${key}`;
    if (known !== undefined) kept[key] = keepKnown(each, known, at, leftOut);
    else if (schema.additionalProperties === false) leftOut.add(at);
    else kept[key] = each;
  }
  return kept;
}

/**
 * Compiles another git revision of gengate the way `npm run build` compiles this one: tsc with that
 * revision's tsconfig.build.json, then every Lua script of its src/ copied to the same place under dist/,
 * wherever that revision keeps them. Its files are extracted with `git archive` into `workDir`, not checked
 * out as a worktree, so removing `workDir` removes every trace of it, even after an interrupted run. Its
 * dependencies are installed there with `npm ci` from its own lockfile, and it is compiled with its own
 * TypeScript.
 */
export function buildGengateAt(ref: string, workDir: string): OtherBuild {
  const run = (command: string, args: readonly string[], cwd: string): string => {
    try {
      return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
    } catch (error) {
      // tsc reports on stdout, git and tar on stderr.
      const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
      const output = `${stdout}${stderr}`.trim();
      throw new Error(`building gengate at ${ref}: ${command} ${args.join(' ')} failed\n${output}`, {
        cause: error,
      });
    }
  };
  const commit = run('git', ['rev-parse', '--verify', '--end-of-options', `${ref}^{commit}`], REPOSITORY);
  const tree = join(workDir, `gengate-${commit.slice(0, SHORT_COMMIT_LENGTH)}`);
  const archive = `${tree}.tar`;
  mkdirSync(tree);
  run('git', ['archive', '--format=tar', `--output=${archive}`, commit], REPOSITORY);
  run('tar', ['-xf', archive, '-C', tree], workDir);
  // Its own dependencies, as its package-lock.json pins them: a revision from before a dependency was
  // added or removed compiles and runs as it was. From npm's cache when it holds them.
  run('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline'], tree);
  run(process.execPath, [TYPESCRIPT_COMPILER, '-p', 'tsconfig.build.json'], tree);
  const sources = join(tree, 'src');
  for (const file of readdirSync(sources, { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.lua')) continue;
    mkdirSync(dirname(join(tree, 'dist', file)), { recursive: true });
    copyFileSync(join(sources, file), join(tree, 'dist', file));
  }
  const main = join(tree, 'dist', 'main.js');
  if (!existsSync(main)) throw new Error(`gengate at ${ref} (${commit}) compiled to no dist/main.js`);
  return { ref, commit, main, configSchema: join(tree, 'dist', 'config', 'schema.js') };
}

export async function startGengate(options: {
  workDir: string;
  upstreamUrl: string;
  redisUrl: string;
  /** Extra Node flags, e.g. --cpu-prof. */
  nodeFlags?: readonly string[];
  /** The compiled entry point: this checkout's dist/main.js unless another build's (buildGengateAt). */
  main?: string;
  /** That build's configuration schema: what it does not know is left out of its configuration. */
  configSchema?: string;
  name?: string;
  /** The store's command timeout, when the default would not do. */
  commandTimeoutMs?: number;
  /** Every feature unless told. */
  features?: BenchFeatures;
}): Promise<BenchGengate> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const key = newTenantKey();
  const name = options.name ?? 'gengate';
  const configFile = join(options.workDir, `${name}.yaml`);
  const logFile = join(options.workDir, `${name}.log`);
  const config = configFor({
    port,
    adminPort,
    upstreamUrl: options.upstreamUrl,
    redisUrl: options.redisUrl,
    key,
    commandTimeoutMs: options.commandTimeoutMs,
    features: options.features ?? EVERY_FEATURE,
  });
  const leftOut = new Set<string>();
  const schema =
    options.configSchema === undefined || !existsSync(options.configSchema)
      ? undefined
      : ((await import(pathToFileURL(options.configSchema).href)) as { ConfigSchema?: KeysSchema })
          .ConfigSchema;
  writeFileSync(
    configFile,
    stringify(schema === undefined ? config : keepKnown(config, schema, '', leftOut)),
  );
  const gengate = spawnPinned(
    name,
    PROXY_CORE,
    process.execPath,
    [
      ...PRODUCTION_NODE_FLAGS,
      ...(options.nodeFlags ?? []),
      options.main ?? GENGATE_MAIN,
      '--config',
      configFile,
    ],
    {
      env: {
        ...process.env,
        [UPSTREAM_TOKEN_ENV]: 'bench-upstream-token',
        [WEBHOOK_SECRET_ENV]: `whsec_${randomBytes(WEBHOOK_SECRET_BYTES).toString('base64')}`,
      },
      stdoutFile: logFile,
    },
  );
  await waitUntil(`${name} to be ready`, () => isReady(adminPort), START_TIMEOUT_MS, gengate);
  return {
    process: gengate,
    port,
    adminPort,
    authorization: `Bearer ${key}`,
    logFile,
    leftOutOfConfig: [...leftOut],
  };
}
