// The signing secrets of every tenant webhook. A secret comes from an environment variable (read once, at
// start) or a file (read at start and again whenever it changes, the way upstream credentials are: see
// src/config/credentials.ts). The value holds one or more Standard Webhooks secrets (`whsec_<base64>`)
// separated by blanks; every one of them signs. When a file's value changes, the secrets it held before
// keep signing for `overlapMs` too, so a receiver that has not yet taken the new secret still verifies.
// Secrets never appear in an error or a log line: only tenant, webhook ids and file paths do.
import { resolve } from 'node:path';
import type { Webhook } from 'standardwebhooks';
import { ConfigError, type ConfigProblem } from '../config/problems.ts';
import { watchFileChanges } from '../config/watch-file.ts';
import {
  judgeWebhookSecret,
  readSecretFile,
  readWebhookSecret,
  type WebhookSecretSource,
} from '../config/webhook-secret-values.ts';

export interface SecretLogger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

export interface WebhookSecretsOptions {
  env: NodeJS.ProcessEnv;
  /** Folder that relative `file` paths are resolved from: the configuration file's folder. */
  baseDir: string;
  overlapMs: number;
  logger?: SecretLogger;
  debounceMs?: number;
  pollIntervalMs?: number;
}

export interface WebhookSigners {
  /** The signers of one webhook: its current secrets, then those still in their rotation overlap. */
  signersOf(tenant: string, webhookId: string): readonly Webhook[];
  close(): void;
}

export interface ConfiguredWebhookSecret {
  tenant: string;
  webhookId: string;
  secret: WebhookSecretSource;
  /** Where the configuration names it (`tenants[0].webhooks[1].secret`), for its problems. */
  path: string;
}

const DEFAULT_DEBOUNCE_MS = 200;
const DEFAULT_POLL_INTERVAL_MS = 5_000;

interface HeldSecret {
  current: Webhook[];
  value: string;
  previous: Webhook[];
  previousUntil: number;
}

const keyOf = (tenant: string, webhookId: string) => `${tenant}\u0000${webhookId}`;

/** Reads every secret now; throws a ConfigError naming each webhook whose secret is missing or malformed. */
export async function openWebhookSecrets(
  webhooks: readonly ConfiguredWebhookSecret[],
  options: WebhookSecretsOptions,
): Promise<WebhookSigners> {
  const held = new Map<string, HeldSecret>();
  const problems: ConfigProblem[] = [];
  const stops: (() => void)[] = [];
  for (const { tenant, webhookId, secret, path } of webhooks) {
    const where = `tenant ${tenant} webhook ${webhookId}`;
    const read = await readWebhookSecret(secret, options.env, options.baseDir);
    const signers = judgeWebhookSecret(read);
    if (typeof signers === 'string') {
      problems.push({ path, message: signers });
      continue;
    }
    const entry: HeldSecret = {
      current: signers,
      value: (read as { value: string }).value,
      previous: [],
      previousUntil: 0,
    };
    held.set(keyOf(tenant, webhookId), entry);
    if ('file' in secret)
      stops.push(followSecretFile(resolve(options.baseDir, secret.file), where, entry, options));
  }
  if (problems.length > 0) {
    for (const stop of stops) stop();
    throw new ConfigError(problems);
  }
  return {
    signersOf(tenant, webhookId) {
      const entry = held.get(keyOf(tenant, webhookId));
      if (entry === undefined) return [];
      return Date.now() < entry.previousUntil ? [...entry.current, ...entry.previous] : entry.current;
    },
    close() {
      for (const stop of stops) stop();
    },
  };
}

function followSecretFile(path: string, where: string, entry: HeldSecret, options: WebhookSecretsOptions) {
  let latestRead = 0;
  const reload = async () => {
    const read = ++latestRead;
    const result = await readSecretFile(path);
    if (read !== latestRead || ('value' in result && result.value === entry.value)) return;
    const signers = judgeWebhookSecret(result);
    if (typeof signers === 'string') {
      options.logger?.warn(
        { webhook: where, file: path, reason: signers },
        'webhook secret file unusable; keeping the last secret',
      );
      return;
    }
    entry.previous = entry.current;
    entry.previousUntil = Date.now() + options.overlapMs;
    entry.current = signers;
    entry.value = (result as { value: string }).value;
    options.logger?.info({ webhook: where, file: path }, 'webhook secret reloaded');
  };
  return watchFileChanges(
    path,
    {
      debounceMs: options.debounceMs ?? DEFAULT_DEBOUNCE_MS,
      pollIntervalMs: options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS,
    },
    () => void reload(),
  );
}
