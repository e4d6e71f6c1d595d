// A webhook's signing secret read and judged, one way for the configuration's checks (credentials.ts:
// start-up and check-config list a bad one with every other problem) and for the webhook service that
// signs with it (src/webhooks/secrets.ts). A value holds one or more Standard Webhooks secrets
// (`whsec_<base64>`) separated by blanks. Neither function ever quotes the value.
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Webhook } from 'standardwebhooks';

export type WebhookSecretSource = { env: string } | { file: string };

export type SecretRead = { value: string } | { reason: string };

export async function readSecretFile(path: string): Promise<SecretRead> {
  try {
    return { value: await readFile(path, 'utf8') };
  } catch (error) {
    return { reason: `cannot read the file (${(error as NodeJS.ErrnoException).code ?? 'error'})` };
  }
}

/** The secret's value from its variable or its file (relative to `baseDir`), or why there is none. */
export async function readWebhookSecret(
  secret: WebhookSecretSource,
  env: NodeJS.ProcessEnv,
  baseDir: string,
): Promise<SecretRead> {
  if ('file' in secret) return readSecretFile(resolve(baseDir, secret.file));
  const value = env[secret.env];
  return value === undefined ? { reason: `environment variable ${secret.env} is not set` } : { value };
}

const NOT_A_SECRET = 'not a whsec_<base64> secret';

/** The signers of a secret value, or the reason it cannot sign. */
function signersOfValue(value: string): Webhook[] | string {
  const secrets = value.split(/\s+/).filter((part) => part !== '');
  if (secrets.length === 0) return 'no secret';
  const signers: Webhook[] = [];
  for (const secret of secrets) {
    if (!/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret)) return NOT_A_SECRET;
    try {
      signers.push(new Webhook(secret));
    } catch {
      // Base64 of a length no encoder writes (`whsec_abc`): the library throws on it.
      return NOT_A_SECRET;
    }
  }
  return signers;
}

/** The signers of what was read, or why there are none. */
export function judgeWebhookSecret(read: SecretRead): Webhook[] | string {
  return 'value' in read ? signersOfValue(read.value) : read.reason;
}
