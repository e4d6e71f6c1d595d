// Authentication (docs/security.md#in-authentication): who may call, and what every refusal looks like. A refused caller never reaches
// the upstream, and no log line ever carries a key or a token.
import { describe, expect, test } from 'vitest';
import { useGatewayHarness, UPSTREAM_TOKENS } from '../support/gateway-harness.ts';

const harness = useGatewayHarness();

function envelope(code: string, message: string) {
  return { status: 401, error: { code, type: 'authentication_error', message } };
}

async function keysWith(authorization: string | undefined) {
  const response = await fetch(`${harness.url}/v1/account/keys`, {
    headers: authorization === undefined ? {} : { authorization },
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

describe('refusals', () => {
  test('no Authorization header: 401 missing_api_key', async () => {
    const response = await keysWith(undefined);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.body).toEqual(
      envelope('missing_api_key', 'send your gengate key as "Authorization: Bearer <key>"'),
    );
  });

  test.each([
    ['an unknown key', () => `Bearer ggk_${'x'.repeat(40)}`],
    ['a wrong scheme', () => `Basic ${harness.keys.alpha}`],
    [
      'a key with a space inside',
      () => `Bearer ${harness.keys.alpha.slice(0, 10)} ${harness.keys.alpha.slice(10)}`,
    ],
    ['a key with a trailing character', () => `Bearer ${harness.keys.alpha}.`],
    ['the scheme alone', () => 'Bearer'],
    ['the upstream token itself', () => `Bearer ${UPSTREAM_TOKENS.shared}`],
  ])('%s: 401 invalid_api_key', async (_name, authorization) => {
    const response = await keysWith(authorization());
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    expect(response.body).toEqual(envelope('invalid_api_key', 'the API key is not valid'));
  });

  test('an expired key: 401 expired_api_key naming only its prefix', async () => {
    const response = await keysWith(`Bearer ${harness.keys.expired}`);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    expect(response.body).toEqual(
      envelope('expired_api_key', `the API key ${harness.keys.expired.slice(0, 8)}… has expired`),
    );
  });

  test('refused requests never reach the upstream', async () => {
    const response = await fetch(`${harness.url}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: 'Bearer nope', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(response.status).toBe(401);
    expect(harness.simulator.received).toEqual([]);
  });
});

describe('accepted forms', () => {
  test.each([
    ['the canonical form', (key: string) => `Bearer ${key}`],
    ['a lower-case scheme (schemes are case-insensitive)', (key: string) => `bearer ${key}`],
    ['surrounding whitespace, which HTTP strips', (key: string) => `  Bearer ${key}  `],
  ])('%s', async (_name, authorization) => {
    const response = await keysWith(authorization(harness.keys.alpha));
    expect(response.status).toBe(200);
  });
});

test('no log line carries a key or an upstream token', async () => {
  await keysWith(`Bearer ${harness.keys.alpha}`);
  await keysWith(`Bearer ${harness.keys.expired}`);
  await keysWith(`Bearer ${harness.keys.beta}`);
  await fetch(`${harness.url}/v1/images/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${harness.keys.alpha}`, 'content-type': 'application/json' },
    body: '{"input":{"positivePrompt":"secret prompt"}}',
  });
  const logs = harness.logLines.join('');
  expect(harness.logLines.length).toBeGreaterThan(3);
  for (const secret of [...Object.values(harness.keys), ...Object.values(UPSTREAM_TOKENS), 'secret prompt']) {
    expect(logs).not.toContain(secret);
  }
});
