// The secret canary itself: it finds the markers in every form it claims to, and a run whose gateway logs
// a key or a token fails, naming the test (or the file's hooks) and where the secret was found (a vitest
// of its own on a leaking fixture).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  CANARY_UPSTREAM_TOKENS,
  canaryTenantKey,
  searchForTenantKeys,
  searchProduced,
  streamSearch,
  takeCanaryFindings,
} from './secret-canary.ts';

describe('the search', () => {
  const key = canaryTenantKey().key;
  const keyBytes = Buffer.from(`Authorization: Bearer ${key}`);

  test.each([
    ['text', `{"authorization":"Bearer ${key}"}`],
    ['byte values (JSON of a Buffer)', JSON.stringify({ rawPacket: keyBytes })],
    ['spaced hex (inspect)', `<Buffer ${keyBytes.toString('hex').replace(/../g, '$& ')}>`],
    ['hex', keyBytes.toString('hex')],
    ['hex', keyBytes.toString('hex').toUpperCase()],
    // Base64 at each of the three alignments the key can have in what is encoded.
    ['base64', Buffer.from(key).toString('base64')],
    ['base64', Buffer.from(`x${key}`).toString('base64')],
    ['base64', Buffer.from(`xy${key}`).toString('base64')],
    ['base64url', Buffer.from(`xy${key}???`).toString('base64url')],
  ])('finds a tenant key as %s', (form, produced) => {
    searchProduced('a log line', produced);
    expect(takeCanaryFindings()).toContainEqual(
      expect.objectContaining({ what: `tenant key (${form})`, source: 'a log line' }),
    );
  });

  test('finds a token cut in two by a chunk boundary, once', () => {
    const search = streamSearch('a socket');
    const text = `x-leak: ${CANARY_UPSTREAM_TOKENS.shared}\r\n`;
    for (let cut = 0; cut < text.length; cut += 7) search(text.slice(cut, cut + 7));
    expect(takeCanaryFindings().map(({ what, source }) => `${what} in ${source}`)).toEqual([
      'upstream token (text) in a socket',
    ]);
  });

  test('what the upstream receives may carry its token, never a tenant key', () => {
    searchForTenantKeys(
      'an upstream request',
      `authorization: Bearer ${CANARY_UPSTREAM_TOKENS.shared}`,
      'a test',
    );
    expect(takeCanaryFindings()).toEqual([]);
    searchForTenantKeys('an upstream request', `{"prompt":"${key}"}`, 'a test');
    expect(takeCanaryFindings()).toMatchObject([{ what: 'tenant key (text)', during: 'a test' }]);
  });

  test('canary keys are shaped like real ones, with a random prefix to tell them apart', () => {
    const keys = Array.from({ length: 50 }, () => canaryTenantKey());
    for (const { key: each, prefix } of keys) {
      expect(each).toMatch(/^ggk_[A-Za-z0-9]{4}CANARYkey[A-Za-z0-9]{27}$/);
      expect(prefix).toBe(each.slice(0, 8));
    }
    expect(new Set(keys.map(({ prefix }) => prefix)).size).toBeGreaterThan(45);
  });
});

test('a run whose gateway logs a key or a token fails, naming the leaking tests, the secret, its form and the source', async () => {
  // vitest's command, as npm's bin link runs it.
  const vitest = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
  // process.execPath is the Node 24 running this suite; the environment is clean of this run's own.
  const child = spawn(
    process.execPath,
    [vitest, 'run', '--config', 'test/support/canary-proof/vitest.config.ts'],
    { env: { PATH: process.env.PATH ?? '', NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const [exitCode] = (await once(child, 'exit')) as [number | null];

  expect(exitCode).toBe(1);
  expect(output).toContain('Tests  2 failed | 1 passed (3)');
  // A line logged after the last test fails the file.
  expect(output).toContain('Failed Suites 1');
  expect(output).toContain(
    '- upstream token (text) in a log line, during "the file’s hooks (outside any test)"',
  );
  expect(output).toContain(
    '- tenant key (text) in a log line, during "a trace line with the Authorization header"',
  );
  expect(output).toContain(
    '- tenant key (byte values (JSON of a Buffer)) in a log line, during "a debug line with the raw packet as a Buffer"',
  );
}, 60_000);
