// Not part of the suite (its name does not end in .test.ts): secret-canary.test.ts runs it in a vitest of
// its own and expects that run to fail, naming each leaking test and where its leak was found.
import { expect, test } from 'vitest';
import { useGatewayHarness } from '../gateway-harness.ts';

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
