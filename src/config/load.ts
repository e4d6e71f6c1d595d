// Loads the configuration: YAML → `${NAME}` interpolation → REDIS_URL override → schema and defaults →
// cross-references → the credentials' values. Every problem found is reported at once in a ConfigError:
// when parts of the file have shape problems, the later checks still run on the parts that passed the
// schema. Only a file that cannot be read, an empty one, or YAML that does not parse stops the pass
// early: there is nothing else to check. The result is frozen.
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import {
  captureEnvCredentials,
  envCredentialProblems,
  fileCredentialProblems,
  redisFileProblems,
} from './credentials.ts';
import { toIsoDateTime } from './date-time.ts';
import { interpolateEnv } from './interpolate.ts';
import { ConfigError, formatPath, type ConfigProblem } from './problems.ts';
import type { GatewayConfig } from './schema.ts';
import { checkConfigSemantics } from './semantic-checks.ts';
import { validateConfigShape } from './validate-shape.ts';
import { isMapping, wellFormedParts } from './well-formed-parts.ts';
import { parseYamlText } from './yaml-document.ts';

export { ConfigError, type ConfigProblem } from './problems.ts';

/**
 * Which of the credentials' values are checked. `all`: every env variable is set and every file readable
 * and not empty (start-up, check-config). `env`: the variables only, as a reload does (credentials change
 * only on restart, and the credential store follows the files itself). `none`: neither
 * (check-config --skip-credentials, for a pipeline that renders the file without its secrets).
 */
export type CredentialChecks = 'all' | 'env' | 'none';

export interface ParseConfigOptions {
  env: NodeJS.ProcessEnv;
  /** The configuration file's folder; relative credential file paths are resolved from it. */
  baseDir: string;
  /** `env` when left out. */
  credentialChecks?: CredentialChecks;
}

const EMPTY_DOCUMENT_PROBLEM: ConfigProblem = {
  path: formatPath([]),
  message: 'the configuration is empty',
};

function childMapping(parent: Record<string, unknown>, key: string): Record<string, unknown> | undefined {
  parent[key] ??= {};
  const child = parent[key];
  return isMapping(child) ? child : undefined;
}

// REDIS_URL, as deployment platforms set it, wins over the file; the schema then validates it.
function applyRedisUrlOverride(document: unknown, env: NodeJS.ProcessEnv): void {
  const redisUrl = env.REDIS_URL;
  if (redisUrl === undefined || redisUrl === '' || !isMapping(document)) return;
  const store = childMapping(document, 'store');
  const redis = store === undefined ? undefined : childMapping(store, 'redis');
  if (redis !== undefined) redis.url = redisUrl;
}

function normaliseExpiryDates(config: GatewayConfig): void {
  for (const tenant of config.tenants) {
    for (const key of tenant.keys) {
      if (key.expiresAt !== undefined) key.expiresAt = toIsoDateTime(key.expiresAt);
    }
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

// Credential files are named relative to the configuration file; the loaded config names them absolutely.
function resolveCredentialFiles(config: GatewayConfig, baseDir: string): void {
  for (const source of Object.values(config.upstream.credentials)) {
    if ('file' in source) source.file = resolve(baseDir, source.file);
  }
}

/** Like loadConfig, for a configuration that is not in a file (tests, tools). */
export async function parseConfigText(text: string, options: ParseConfigOptions): Promise<GatewayConfig> {
  const credentialChecks = options.credentialChecks ?? 'env';
  // An empty file is more likely a truncated or unrendered one than a wish for defaults.
  const parsed = parseYamlText(text);
  if (parsed === null) throw new ConfigError([EMPTY_DOCUMENT_PROBLEM]);

  const problems: ConfigProblem[] = [];
  const document = interpolateEnv(parsed, options.env, problems);
  applyRedisUrlOverride(document, options.env);
  const shape = validateConfigShape(document);
  problems.push(...shape.problems);
  const parts = wellFormedParts(document, shape);
  problems.push(...checkConfigSemantics(parts));
  if (credentialChecks !== 'none') problems.push(...envCredentialProblems(parts.credentials, options.env));
  if (credentialChecks === 'all') {
    problems.push(...(await fileCredentialProblems(parts.credentials, options.baseDir)));
    if (shape.isWellFormed(['store', 'redis']))
      problems.push(...(await redisFileProblems((document as GatewayConfig).store.redis)));
  }
  if (problems.length > 0) throw new ConfigError(problems);

  const config = document as GatewayConfig;
  captureEnvCredentials(config.upstream.credentials, options.env);
  normaliseExpiryDates(config);
  resolveCredentialFiles(config, options.baseDir);
  return deepFreeze(config);
}

export async function loadConfig(
  path: string,
  env: NodeJS.ProcessEnv,
  credentialChecks?: CredentialChecks,
): Promise<GatewayConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : String(error);
    throw new ConfigError([{ path, message: `cannot read the configuration file: ${reason}` }]);
  }
  return parseConfigText(text, { env, baseDir: dirname(resolve(path)), credentialChecks });
}
