// Not part of the suite (its name does not end in .test.ts): secret-canary.test.ts runs it in a vitest of
// its own and expects that run to fail, naming each leaking test and where its leak was found.
import { afterAll, expect, test } from 'vitest';
import { UPSTREAM_TOKENS, useGatewayHarness } from '../gateway-harness.ts';

const harness = useGatewayHarness();

test('a clean request', async () => {
  const response = await fetch(`${harness.url}/v1/account/keys`, {
    headers: { authorization: `Bearer ${harness.keys.alpha}` },
  });
  expect(response.status).toBe(200);
});

test('a trace line with the Authorization header', () => {
  harness.app.log.trace({ authorization: `Bearer ${harness.keys.gamma}` }, 'deliberate leak');
});

test('a debug line with the raw packet as a Buffer', () => {
  harness.app.log.debug({
    rawPacket: Buffer.from(`GET / HTTP/1.1\r\nAuthorization: Bearer ${harness.keys.beta}`),
  });
});

// After the last test, as a gateway's closing lines are: the file fails.
afterAll(() => {
  harness.app.log.warn({ token: UPSTREAM_TOKENS.shared }, 'deliberate leak while closing');
});
