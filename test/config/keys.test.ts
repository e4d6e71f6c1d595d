import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateTenantKey, hashTenantKey } from '../../src/auth/keys.ts';

describe('tenant keys', () => {
  it('are ggk_ and 40 base62 characters, with the first 8 characters as prefix and the SHA-256 hex as hash', () => {
    const { key, sha256, prefix } = generateTenantKey();
    expect(key).toMatch(/^ggk_[A-Za-z0-9]{40}$/);
    expect(prefix).toBe(key.slice(0, 8));
    expect(sha256).toBe(createHash('sha256').update(key).digest('hex'));
    expect(hashTenantKey(key)).toBe(sha256);
  });

  it('are different every time and use the whole base62 alphabet', () => {
    const keys = Array.from({ length: 200 }, () => generateTenantKey().key);
    expect(new Set(keys).size).toBe(keys.length);
    const characters = new Set(keys.flatMap((key) => Array.from(key.slice(4))));
    expect(characters.size).toBe(62);
  });

  it('hash as the known SHA-256 test vector', () => {
    expect(hashTenantKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
