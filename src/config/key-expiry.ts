// Keys that have expired, or expire soon, are not errors (a file listing one still loads, and the key is
// refused with 401 expired_api_key), but an operator should hear of them before a tenant does:
// check-config warns (and fails with --strict), and the gateway logs the same warnings at start and on
// every reload.
import { formatPath, type ConfigProblem } from './problems.ts';
import type { TenantConfig } from './schema.ts';

/** How far ahead an expiry is worth a warning. */
export const KEY_EXPIRY_WARNING_DAYS = 14;
const DAY_MS = 86_400_000;

/** What the warnings read of a tenant (new-key asks about a key not yet in any file). */
interface TenantKeys {
  id: string;
  keys: readonly Pick<TenantConfig['keys'][number], 'prefix' | 'expiresAt'>[];
}

export function keyExpiryWarnings(tenants: readonly TenantKeys[], nowMs: number): ConfigProblem[] {
  const warnings: ConfigProblem[] = [];
  tenants.forEach((tenant, tenantIndex) => {
    tenant.keys.forEach((key, keyIndex) => {
      if (key.expiresAt === undefined) return;
      const expiresAtMs = Date.parse(key.expiresAt);
      const path = formatPath(['tenants', tenantIndex, 'keys', keyIndex, 'expiresAt']);
      const which = `key ${key.prefix} of tenant "${tenant.id}"`;
      if (expiresAtMs <= nowMs) {
        warnings.push({ path, message: `${which} expired at ${key.expiresAt}` });
      } else if (expiresAtMs - nowMs <= KEY_EXPIRY_WARNING_DAYS * DAY_MS) {
        const days = Math.ceil((expiresAtMs - nowMs) / DAY_MS);
        warnings.push({
          path,
          message: `${which} expires at ${key.expiresAt}, in ${days} day${days === 1 ? '' : 's'}`,
        });
      }
    });
  });
  return warnings;
}
