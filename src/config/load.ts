// Loads the configuration: YAML → `${NAME}` interpolation → REDIS_URL and LOG_LEVEL overrides → schema and defaults →
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
  webhookSecretProblems,
} from './credentials.ts';
import { toIsoDateTime } from './date-time.ts';
import { interpolateEnv, type EnvSource } from './interpolate.ts';
import { keyExpiryWarningsOfMembers } from './key-expiry.ts';
import { ConfigError, formatPath, type ConfigProblem } from './problems.ts';
import type { GatewayConfig } from './schema.ts';
import { checkConfigSemantics } from './semantic-checks.ts';
import { validateConfigShape } from './validate-shape.ts';
import { isMapping, wellFormedParts } from './well-formed-parts.ts';
import { parseYamlText } from './yaml-document.ts';

export { ConfigError, type ConfigProblem } from './problems.ts';

/**
 * Which of the credentials' values are checked. `all`: every env variable is set and every file readable
 * and not empty, and every webhook secret holds secrets that sign (start-up, check-config). `env`: the
 * upstream credentials' variables only, as a reload does (credentials change only on restart, and the
 * credential store follows the files itself). `none`: neither (check-config --skip-credentials, for a
 * pipeline that renders the file without its secrets).
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

// Variables that, when set, win over a value of the file: REDIS_URL as deployment platforms set it, and
// LOG_LEVEL. The schema then validates them like the file's own values.
const ENV_OVERRIDES = [
  { variable: 'REDIS_URL', path: ['store', 'redis', 'url'] },
  { variable: 'LOG_LEVEL', path: ['logging', 'level'] },
] as const;

function applyEnvOverrides(document: unknown, env: NodeJS.ProcessEnv): EnvSource[] {
  const applied: EnvSource[] = [];
  for (const { variable, path } of ENV_OVERRIDES) {
    const value = env[variable];
    if (value === undefined || value === '' || !isMapping(document)) continue;
    const parent = path
      .slice(0, -1)
      .reduce<Record<string, unknown> | undefined>(
        (node, key) => (node === undefined ? undefined : childMapping(node, key)),
        document,
      );
    if (parent === undefined) continue;
    parent[path[path.length - 1] ?? ''] = value;
    applied.push({ path: [...path], variables: [variable], whole: false });
  }
  return applied;
}

// A value that came from the environment is wrong in the environment, not in the file: say which variable.
function nameTheVariables(
  problems: readonly ConfigProblem[],
  sources: readonly EnvSource[],
): ConfigProblem[] {
  const variablesAt = new Map(sources.map((source) => [formatPath(source.path), source.variables]));
  return problems.map((problem) => {
    const variables = variablesAt.get(problem.path);
    if (variables === undefined) return problem;
    const names = variables.join(', ');
    return { ...problem, message: `${problem.message} (from the environment: ${names})` };
  });
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
  const { document, sources } = interpolateEnv(parsed, options.env, problems);
  sources.push(...applyEnvOverrides(document, options.env));
  const shape = validateConfigShape(
    document,
    sources.filter((source) => source.whole).map((source) => source.path),
  );
  problems.push(...nameTheVariables(shape.problems, sources));
  const parts = wellFormedParts(document, shape);
  problems.push(...nameTheVariables(checkConfigSemantics(parts), sources));
  if (credentialChecks !== 'none') problems.push(...envCredentialProblems(parts.credentials, options.env));
  if (credentialChecks === 'all') {
    problems.push(...(await fileCredentialProblems(parts.credentials, options.baseDir)));
    if (shape.isWellFormed(['store', 'redis']))
      problems.push(...(await redisFileProblems((document as GatewayConfig).store.redis)));
    problems.push(...(await webhookSecretProblems(parts.tenantMembers, options.env, options.baseDir)));
  }
  if (problems.length > 0) {
    throw new ConfigError(problems, keyExpiryWarningsOfMembers(parts.tenantMembers, Date.now()));
  }

  const config = document as GatewayConfig;
  captureEnvCredentials(config.upstream.credentials, options.env);
  normaliseExpiryDates(config);
  resolveCredentialFiles(config, options.baseDir);
  return deepFreeze(config);
}

/**
 * Reads and checks the file at `path`. Relative credential files are read from its folder, or from
 * `baseDir`, where the file is meant to be installed (check-config --against).
 */
export async function loadConfig(
  path: string,
  env: NodeJS.ProcessEnv,
  credentialChecks?: CredentialChecks,
  baseDir: string = dirname(resolve(path)),
): Promise<GatewayConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : String(error);
    throw new ConfigError([{ path, message: `cannot read the configuration file: ${reason}` }]);
  }
  return parseConfigText(text, { env, baseDir, credentialChecks });
}
