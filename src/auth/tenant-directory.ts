// Who is calling: maps a bearer key to its tenant by SHA-256, so plain keys are never stored.
// Rebuilt as a whole on configuration reload; the request path only reads it.
import type { TenantConfig } from '../config/schema.ts';
import { gatewayError } from '../errors/registry.ts';
import { hashTenantKey } from './keys.ts';

export interface AuthenticatedCaller {
  tenant: TenantConfig;
  keyPrefix: string;
}

interface KeyEntry {
  tenant: TenantConfig;
  prefix: string;
  expiresAtMs: number;
}

// `ggk_` and at least 32 base62 characters (docs/configuration.md, "Tenant keys"); anything else cannot be a
// key.
const TENANT_KEY_PATTERN = /^ggk_[A-Za-z0-9]{32,256}$/;
const BEARER_PATTERN = /^Bearer +(\S+)$/i;
const WWW_AUTHENTICATE = { 'www-authenticate': 'Bearer' };

export interface TenantDirectory {
  authenticate(authorization: string | undefined, nowMs: number): AuthenticatedCaller;
}

export function createTenantDirectory(tenants: readonly TenantConfig[]): TenantDirectory {
  const byHash = new Map<string, KeyEntry>();
  for (const tenant of tenants) {
    for (const key of tenant.keys) {
      const expiresAtMs = key.expiresAt === undefined ? Number.POSITIVE_INFINITY : Date.parse(key.expiresAt);
      byHash.set(key.sha256, { tenant, prefix: key.prefix, expiresAtMs });
    }
  }

  return {
    authenticate(authorization, nowMs) {
      if (authorization === undefined || authorization === '') {
        throw gatewayError('missing_api_key', { headers: WWW_AUTHENTICATE });
      }
      const key = BEARER_PATTERN.exec(authorization)?.[1];
      const entry =
        key !== undefined && TENANT_KEY_PATTERN.test(key) ? byHash.get(hashTenantKey(key)) : undefined;
      if (entry === undefined) {
        throw gatewayError('invalid_api_key', { headers: WWW_AUTHENTICATE });
      }
      if (entry.expiresAtMs <= nowMs) {
        throw gatewayError('expired_api_key', { keyPrefix: entry.prefix }, { headers: WWW_AUTHENTICATE });
      }
      return { tenant: entry.tenant, keyPrefix: entry.prefix };
    },
  };
}
