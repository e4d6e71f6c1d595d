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

/** A tenant's keys as the warnings read them, each with its place in the file. */
interface PlacedTenantKeys {
  index: number;
  id: string | undefined;
  keys: readonly { index: number; item: TenantKeys['keys'][number] }[];
}

/** The warning for one key expiring at `expiresAt`, or undefined when it is not soon. */
function expiryWarning(
  path: string,
  which: string,
  expiresAt: string,
  nowMs: number,
): ConfigProblem | undefined {
  const expiresAtMs = Date.parse(expiresAt);
  if (expiresAtMs <= nowMs) return { path, message: `${which} expired at ${expiresAt}` };
  if (expiresAtMs - nowMs > KEY_EXPIRY_WARNING_DAYS * DAY_MS) return undefined;
  const days = Math.ceil((expiresAtMs - nowMs) / DAY_MS);
  return { path, message: `${which} expires at ${expiresAt}, in ${days} day${days === 1 ? '' : 's'}` };
}

export function keyExpiryWarnings(tenants: readonly TenantKeys[], nowMs: number): ConfigProblem[] {
  return keyExpiryWarningsOfMembers(
    tenants.map((tenant, index) => ({
      index,
      id: tenant.id,
      keys: tenant.keys.map((item, keyIndex) => ({ index: keyIndex, item })),
    })),
    nowMs,
  );
}

/**
 * The same warnings for the keys that passed the schema in a file that has problems: check-config lists
 * them with the problems, so that one pass tells everything.
 */
export function keyExpiryWarningsOfMembers(
  tenants: readonly PlacedTenantKeys[],
  nowMs: number,
): ConfigProblem[] {
  return tenants.flatMap(({ index: tenantIndex, id, keys }) =>
    keys.flatMap(({ index: keyIndex, item: key }) => {
      if (key.expiresAt === undefined) return [];
      const path = formatPath(['tenants', tenantIndex, 'keys', keyIndex, 'expiresAt']);
      const which = `key ${key.prefix} of tenant "${id ?? tenantIndex}"`;
      const warning = expiryWarning(path, which, key.expiresAt, nowMs);
      return warning === undefined ? [] : [warning];
    }),
  );
}
