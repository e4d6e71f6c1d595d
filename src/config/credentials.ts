// The named upstream tokens. `{ env }` tokens are taken from the environment given to loadConfig, once;
// `{ file }` tokens are read at start and again whenever the file changes (src/config/watch-file.ts
// follows Kubernetes secret mounts too).
// Tokens never appear in an error or a log line: only credential names and file paths do.
// The problems of the other secrets the loader checks, Redis's files and the webhooks' signing secrets,
// are found here too.
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { watchFileChanges } from './watch-file.ts';
import type { Logger } from 'pino';
import { ConfigError, formatPath, type ConfigProblem } from './problems.ts';
import type { GatewayConfig } from './schema.ts';
import type { NamedCredential, TenantMembers } from './well-formed-parts.ts';
import { judgeWebhookSecret, readWebhookSecret } from './webhook-secret-values.ts';

const DEFAULT_CREDENTIAL_DEBOUNCE_MS = 200;
const DEFAULT_CREDENTIAL_POLL_INTERVAL_MS = 5_000;

type CredentialsConfig = GatewayConfig['upstream']['credentials'];

export interface CredentialStore {
  /** The current token of a configured credential. */
  get(name: string): string;
  has(name: string): boolean;
  close(): void;
}

export interface CredentialStoreOptions {
  /** Folder that relative `file` paths are resolved from: the configuration file's folder. */
  baseDir: string;
  logger?: Pick<Logger, 'info' | 'warn'>;
  debounceMs?: number;
  pollIntervalMs?: number;
  /** Called with the name of a credential whose file brought a new token (so it can be checked). */
  onRotated?: (name: string) => void;
}

// The environment's tokens travel from loadConfig to createCredentialStore beside the configuration,
// never inside it, so a configuration that is logged or printed cannot carry a token.
const envTokensOfConfig = new WeakMap<CredentialsConfig, ReadonlyMap<string, string>>();

/** The env credentials among `credentials` whose variable is not set, or holds only blanks. */
export function envCredentialProblems(
  credentials: readonly NamedCredential[],
  env: NodeJS.ProcessEnv,
): ConfigProblem[] {
  return credentials.flatMap(({ name, source }) => {
    if (!('env' in source) || (env[source.env]?.trim() ?? '') !== '') return [];
    const state = env[source.env] === undefined ? 'is not set' : 'is empty';
    return [
      {
        path: formatPath(['upstream', 'credentials', name, 'env']),
        message: `environment variable ${source.env} ${state}`,
      },
    ];
  });
}

/**
 * Keeps the token of every `{ env }` credential that `env` holds, for createCredentialStore (the loader
 * calls it once the configuration is valid).
 */
export function captureEnvCredentials(credentials: CredentialsConfig, env: NodeJS.ProcessEnv): void {
  const tokens = new Map<string, string>();
  for (const [name, source] of Object.entries(credentials)) {
    const token = 'env' in source ? (env[source.env]?.trim() ?? '') : '';
    if (token !== '') tokens.set(name, token);
  }
  envTokensOfConfig.set(credentials, tokens);
}

async function readToken(path: string): Promise<{ token: string } | { reason: string }> {
  try {
    const token = (await readFile(path, 'utf8')).trim();
    return token === '' ? { reason: 'the file is empty' } : { token };
  } catch (error) {
    return { reason: `cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  }
}

function tokenFileProblem(name: string, path: string, reason: string): ConfigProblem {
  return { path: formatPath(['upstream', 'credentials', name, 'file']), message: `${path}: ${reason}` };
}

/** The file credentials among `credentials` whose file, named from `baseDir`, cannot be read or is empty. */
export async function fileCredentialProblems(
  credentials: readonly NamedCredential[],
  baseDir: string,
): Promise<ConfigProblem[]> {
  const problems = await Promise.all(
    credentials.map(async ({ name, source }) => {
      if (!('file' in source)) return [];
      const path = resolve(baseDir, source.file);
      const read = await readToken(path);
      return 'reason' in read ? [tokenFileProblem(name, path, read.reason)] : [];
    }),
  );
  return problems.flat();
}

/**
 * The Redis password and CA files (store.redis.passwordFile, tls.caFile) that cannot be read or are empty:
 * the store reads them once at start-up, so a missing one is a configuration error, not a late surprise.
 */
export async function redisFileProblems(redis: GatewayConfig['store']['redis']): Promise<ConfigProblem[]> {
  const files: [string[], string | undefined][] = [
    [['store', 'redis', 'passwordFile'], redis.passwordFile],
    [['store', 'redis', 'tls', 'caFile'], redis.tls?.caFile],
  ];
  const problems = await Promise.all(
    files.map(async ([path, file]) => {
      if (file === undefined) return [];
      const read = await readToken(file);
      return 'reason' in read ? [{ path: formatPath(path), message: `${file}: ${read.reason}` }] : [];
    }),
  );
  return problems.flat();
}

/**
 * The tenant webhooks whose signing secret is missing or cannot sign, read and judged as the webhook
 * service reads them at start (webhook-secret-values.ts), so that what the loader reports and what the
 * gateway refuses cannot differ.
 */
export async function webhookSecretProblems(
  tenants: readonly TenantMembers[],
  env: NodeJS.ProcessEnv,
  baseDir: string,
): Promise<ConfigProblem[]> {
  const judged = tenants.flatMap(({ index: tenantIndex, webhooks }) =>
    webhooks.map(async ({ index, item }): Promise<ConfigProblem | undefined> => {
      const signers = judgeWebhookSecret(await readWebhookSecret(item.secret, env, baseDir));
      if (typeof signers !== 'string') return undefined;
      return { path: formatPath(['tenants', tenantIndex, 'webhooks', index, 'secret']), message: signers };
    }),
  );
  return (await Promise.all(judged)).filter((problem) => problem !== undefined);
}

interface FileCredential {
  name: string;
  path: string;
}

// Re-reads one token file after a change. A slow read finishing after a newer one is ignored.
function followTokenFile(
  { name, path }: FileCredential,
  tokens: Map<string, string>,
  options: CredentialStoreOptions,
): () => void {
  let latestRead = 0;
  // Folder events and polling both report one change; each state is logged once.
  let reportedReason: string | undefined;
  const reload = async () => {
    const read = ++latestRead;
    const result = await readToken(path);
    if (read !== latestRead) return;
    if ('reason' in result) {
      if (result.reason !== reportedReason) {
        options.logger?.warn(
          { credential: name, file: path, reason: result.reason },
          'credential file unusable; keeping the last token',
        );
      }
      reportedReason = result.reason;
      return;
    }
    reportedReason = undefined;
    if (result.token !== tokens.get(name)) {
      tokens.set(name, result.token);
      options.logger?.info({ credential: name, file: path }, 'credential reloaded');
      options.onRotated?.(name);
    }
  };
  return watchFileChanges(
    path,
    {
      debounceMs: options.debounceMs ?? DEFAULT_CREDENTIAL_DEBOUNCE_MS,
      pollIntervalMs: options.pollIntervalMs ?? DEFAULT_CREDENTIAL_POLL_INTERVAL_MS,
    },
    () => void reload(),
  );
}

export async function createCredentialStore(
  credentials: CredentialsConfig,
  options: CredentialStoreOptions,
): Promise<CredentialStore> {
  const envTokens = envTokensOfConfig.get(credentials);
  if (envTokens === undefined) {
    throw new Error(
      'createCredentialStore needs the upstream.credentials of a configuration from loadConfig',
    );
  }
  const tokens = new Map(envTokens);
  const fileCredentials: FileCredential[] = Object.entries(credentials).flatMap(([name, source]) =>
    'file' in source ? [{ name, path: resolve(options.baseDir, source.file) }] : [],
  );
  const problems: ConfigProblem[] = [];
  for (const { name, path } of fileCredentials) {
    const initial = await readToken(path);
    if ('reason' in initial) problems.push(tokenFileProblem(name, path, initial.reason));
    else tokens.set(name, initial.token);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const stopWatching = fileCredentials.map((credential) => followTokenFile(credential, tokens, options));

  return {
    get(name) {
      const token = tokens.get(name);
      if (token === undefined) throw new Error(`unknown upstream credential "${name}"`);
      return token;
    },
    has: (name) => tokens.has(name),
    close() {
      for (const stop of stopWatching) stop();
    },
  };
}
