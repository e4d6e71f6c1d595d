// docs/security.md#at-the-http-edge: a known path with any other method is 405 with `Allow`, whoever decides it:
// Fastify's 404 handler for methods Node knows (TRACE, PROPFIND...), the client-error handler for tokens
// Node's parser refuses before any request exists (FOO, `get` in lower case), the 'connect' listener for
// CONNECT. Any other target stays 404 route_not_found. Nothing is ever forwarded.
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, test } from 'vitest';
import { useGatewayHarness } from '../support/gateway-harness.ts';
import { ROUTE_ID_NOT_UUID, ROUTE_NOT_FOUND, ROUTE_QUERY_STRING } from '../support/route-not-found.ts';
import { exchangeRaw } from '../support/raw-exchange.ts';

const harness = useGatewayHarness();

const ID = randomUUID();

function methodNotAllowed(named: string, allow: string) {
  return {
    status: 405,
    error: {
      code: 'method_not_allowed',
      type: 'not_found_error',
      message: `${named} is not allowed here; use ${allow}`,
    },
  };
}

async function send(method: string, target: string) {
  const exchange = await exchangeRaw(
    harness.url,
    `${method} ${target} HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer ${harness.keys.alpha}\r\n\r\n`,
    { answers: 1 },
  );
  const [answer] = exchange.answers;
  return {
    status: answer?.status,
    allow: answer?.headers.allow,
    body: JSON.parse(answer?.body ?? 'null') as unknown,
  };
}

afterEach(async () => {
  expect(harness.simulator.received).toEqual([]);
  const response = await fetch(`${harness.url}/v1/account/usage`, {
    headers: { authorization: `Bearer ${harness.keys.alpha}` },
  });
  expect(response.status).toBe(200);
});

describe('a known path with another method: 405 with Allow', () => {
  test.each([
    ['TRACE', '/v1/account/usage', 'GET'],
    ['PROPFIND', `/v1/videos/generations/${ID}`, 'GET, DELETE'],
    ['MKCOL', '/v1/images/generations', 'POST'],
    ['QUERY', '/v1/account/keys', 'GET'],
    ['M-SEARCH', '/v1/keys', 'GET'],
    ['CONNECT', '/v1/images/generations', 'POST'],
  ])('%s %s (a method Node knows: named in the message)', async (method, target, allow) => {
    expect(await send(method, target)).toEqual({ status: 405, allow, body: methodNotAllowed(method, allow) });
  });

  test.each([
    ['FOO', '/v1/account/usage', 'GET'],
    ['get', '/v1/account/usage', 'GET'],
    ['Post', '/v1/images/generations', 'POST'],
    ['GETS', `/v1/images/generations/${ID}`, 'GET'],
    ['PROPFINDX', `/v1/videos/generations/${ID.toUpperCase()}`, 'GET, DELETE'],
    ['X-CUSTOM_1', '/v1/usage', 'GET'],
  ])('%s %s (a token Node refuses: not echoed)', async (method, target, allow) => {
    expect(await send(method, target)).toEqual({
      status: 405,
      allow,
      body: methodNotAllowed('this method', allow),
    });
  });
});

describe('any other target: 404 route_not_found, whatever the method', () => {
  test.each([
    ['TRACE', '/v1/images/edits', ROUTE_NOT_FOUND],
    ['FOO', '/nowhere', ROUTE_NOT_FOUND],
    ['get', `/v1/images/generations/not-a-uuid`, ROUTE_ID_NOT_UUID],
    ['CONNECT', '/v1/account/keys?x=1', ROUTE_QUERY_STRING],
    ['PROPFIND', '/v1/account/%6beys', ROUTE_NOT_FOUND],
  ])('%s %s', async (method, target, body) => {
    expect(await send(method, target)).toEqual({ status: 404, allow: undefined, body });
  });

  test('decided on the head: a body Fastify would refuse (415) does not change the answer', async () => {
    const withBody = (method: string, target: string) =>
      `${method} ${target} HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: text/plain\r\n` +
      'Content-Length: 5\r\n\r\nhello';
    const exchange = await exchangeRaw(
      harness.url,
      withBody('PUT', '/v1/images/generations') + withBody('POST', '/nowhere'),
      { answers: 2 },
    );
    expect(exchange.answers.map((answer) => [answer.status, JSON.parse(answer.body) as unknown])).toEqual([
      [405, methodNotAllowed('PUT', 'POST')],
      [404, ROUTE_NOT_FOUND],
    ]);
  });

  test('a request line that is not one (no version): 400 bad_request', async () => {
    const exchange = await exchangeRaw(harness.url, 'FOO /v1/account/usage\r\n\r\n');
    expect(exchange.answers.map((answer) => [answer.status, JSON.parse(answer.body) as unknown])).toEqual([
      [
        400,
        {
          status: 400,
          error: { code: 'bad_request', type: 'validation_error', message: 'the request is not valid HTTP' },
        },
      ],
    ]);
  });
});
