// Loads the configuration: YAML → `${NAME}` interpolation → REDIS_URL override → schema and defaults →
// cross-references. Every problem found is reported at once in a ConfigError; the result is frozen.
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { captureEnvCredentials } from './credentials.ts';
import { toIsoDateTime } from './date-time.ts';
import { interpolateEnv } from './interpolate.ts';
import { ConfigError, type ConfigProblem } from './problems.ts';
import type { GatewayConfig } from './schema.ts';
import { checkConfigSemantics } from './semantic-checks.ts';
import { validateConfigShape } from './validate-shape.ts';
import { parseYamlText } from './yaml-document.ts';

export { ConfigError, type ConfigProblem } from './problems.ts';

export interface ParseConfigOptions {
  env: NodeJS.ProcessEnv;
  /** The configuration file's folder; relative credential file paths are resolved from it. */
  baseDir: string;
}

type Mapping = Record<string, unknown>;

const isMapping = (value: unknown): value is Mapping =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function childMapping(parent: Mapping, key: string): Mapping | undefined {
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

function parseConfig(text: string, options: ParseConfigOptions): GatewayConfig {
  const problems: ConfigProblem[] = [];
  // An empty file is a configuration of defaults only.
  const document = interpolateEnv(parseYamlText(text) ?? {}, options.env, problems);
  applyRedisUrlOverride(document, options.env);
  problems.push(...validateConfigShape(document));
  if (problems.length > 0) throw new ConfigError(problems);

  const config = document as GatewayConfig;
  problems.push(
    ...checkConfigSemantics(config),
    ...captureEnvCredentials(config.upstream.credentials, options.env),
  );
  if (problems.length > 0) throw new ConfigError(problems);
  normaliseExpiryDates(config);
  resolveCredentialFiles(config, options.baseDir);
  return deepFreeze(config);
}

/** Like loadConfig, for a configuration that is not in a file (tests, tools). */
export function parseConfigText(text: string, options: ParseConfigOptions): Promise<GatewayConfig> {
  return Promise.try(() => parseConfig(text, options));
}

export async function loadConfig(path: string, env: NodeJS.ProcessEnv): Promise<GatewayConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : String(error);
    throw new ConfigError([{ path, message: `cannot read the configuration file: ${reason}` }]);
  }
  return parseConfigText(text, { env, baseDir: dirname(resolve(path)) });
}
