// Tenant key material: fresh keys, and the SHA-256 hash that is all the configuration ever stores.
import { hash, randomBytes } from 'node:crypto';
import { TENANT_KEY_PREFIX } from '../config/schema.ts';

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const KEY_RANDOM_CHARACTERS = 40;
const KEY_PREFIX_LENGTH = 8;
// 248 = 4 × 62: bytes at or above it are dropped, so `byte % 62` picks every character equally often.
const UNBIASED_BYTE_LIMIT = 256 - (256 % BASE62.length);
// Enough bytes that one draw almost always suffices (about 3% of bytes are dropped).
const BYTES_PER_DRAW = 64;

export interface TenantKey {
  /** The secret: shown once, never stored. */
  key: string;
  sha256: string;
  /** The key's first 8 characters, kept so people can tell keys apart. */
  prefix: string;
}

function randomBase62(length: number): string {
  let text = '';
  while (text.length < length) {
    for (const byte of randomBytes(BYTES_PER_DRAW)) {
      if (byte < UNBIASED_BYTE_LIMIT && text.length < length) text += BASE62.charAt(byte % BASE62.length);
    }
  }
  return text;
}

export function hashTenantKey(key: string): string {
  // The one-shot hash: no Hash object per request (docs/performance.md).
  return hash('sha256', key, 'hex');
}

/** The part of a key the configuration keeps and logs may show: its first 8 characters. */
export function keyPrefixOf(key: string): string {
  return key.slice(0, KEY_PREFIX_LENGTH);
}

export function generateTenantKey(): TenantKey {
  const key = TENANT_KEY_PREFIX + randomBase62(KEY_RANDOM_CHARACTERS);
  return { key, sha256: hashTenantKey(key), prefix: keyPrefixOf(key) };
}
