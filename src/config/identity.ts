// The identity of a tenant configuration (docs/operations.md, gengate_config_info{hash}): replicas of one
// release that report different hashes serve different keys, policies or limits. The hash is taken over
// the tenants as validated (defaults applied, environment variables substituted), with object keys in a
// fixed order, so that two files that differ only in layout, comments or key order give the same hash.
import { createHash } from 'node:crypto';
import type { GatewayConfig } from './schema.ts';

/** Hex digits of the SHA-256 kept: 64 bits tell configurations apart and keep the label short. */
const CONFIG_HASH_HEX_DIGITS = 16;

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The hash gengate_config_info reports for a configuration's tenants. */
export function tenantConfigHash(tenants: GatewayConfig['tenants']): string {
  return createHash('sha256').update(canonicalJson(tenants)).digest('hex').slice(0, CONFIG_HASH_HEX_DIGITS);
}
