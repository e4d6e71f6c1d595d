// The route allowlist (docs/security.md#at-the-http-edge): only the routes of the table exist. Every other spelling of a path, however close to a
// real one, is refused before authentication matters and before anything reaches the upstream.
import { randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { useGatewayHarness } from '../support/gateway-harness.ts';
import { sendRaw } from '../support/raw-http.ts';
import {
  ROUTE_ID_NOT_UUID,
  ROUTE_NOT_FOUND,
  ROUTE_QUERY_STRING,
  ROUTE_TRAILING_SLASH,
} from '../support/route-not-found.ts';

const harness = useGatewayHarness();

const ID = randomUUID();

// A near miss of a table path (a trailing slash, a query string, an id that is not a UUID) gets the same
// 404, its message saying what is wrong.
describe('request targets that are not in the table get 404 route_not_found', () => {
  test.each([
    ['an unknown path', '/v1/images/edits'],
    ['the root', '/'],
    ['an unversioned path', '/images/generations'],
    ['a percent-encoded slash', '/v1/account%2Fkeys'],
    ['a percent-encoded letter', '/v1/account/%6beys'],
    ['a percent-encoded dot segment', `/v1/videos/generations/%2e%2e/..%2Faccount%2Fkeys`],
    ['a traversal from a video id to the keys', `/v1/videos/generations/${ID}/../../account/keys`],
    [
      'a traversal with encoded slashes inside the id segment',
      `/v1/videos/generations/${ID}%2F..%2F..%2Faccount%2Fkeys`,
      ROUTE_ID_NOT_UUID,
    ],
    ['a dot segment', '/v1/./account/keys'],
    ['a double slash', '//v1/account/keys'],
    ['a double slash inside', '/v1//account/keys'],
    ['an upper-case path', '/V1/ACCOUNT/KEYS'],
    ['a trailing slash', '/v1/account/keys/', ROUTE_TRAILING_SLASH],
    ['a ; parameter', '/v1/account/keys;x=1'],
    ['a ; parameter after an id', `/v1/images/generations/${ID};x=1`, ROUTE_ID_NOT_UUID],
    ['a query string', '/v1/account/keys?user=other', ROUTE_QUERY_STRING],
    ['an empty query string', '/v1/account/keys?', ROUTE_QUERY_STRING],
    ['an id that is not a UUID', '/v1/images/generations/12345', ROUTE_ID_NOT_UUID],
    ['an id with a suffix', `/v1/images/generations/${ID}x`, ROUTE_ID_NOT_UUID],
    ['an overlong path', `/v1/images/generations/${'a'.repeat(4000)}`, ROUTE_ID_NOT_UUID],
    ['a backslash', '/v1\\account\\keys'],
    ['a malformed percent-encoding in an id', '/v1/images/generations/%zz', ROUTE_ID_NOT_UUID],
    ['a malformed percent-encoding in a static path', '/v1/account/%zzkeys'],
  ])('%s', async (_name, target, answer = ROUTE_NOT_FOUND) => {
    const response = await sendRaw(harness.url, 'GET', target, {
      authorization: `Bearer ${harness.keys.beta}`,
    });
    expect(response.status).toBe(404);
    expect(JSON.parse(response.body)).toEqual(answer);
    expect(harness.simulator.received).toEqual([]);
  });

  test.each([
    ['PUT', '/v1/images/generations/not-a-uuid', ROUTE_ID_NOT_UUID],
    ['PATCH', '/v1/account/keys?x=1', ROUTE_QUERY_STRING],
  ])('with a method the path does not allow, too: %s %s', async (method, target, answer) => {
    const response = await sendRaw(harness.url, method, target, {
      authorization: `Bearer ${harness.keys.beta}`,
    });
    expect(response.status).toBe(404);
    expect(JSON.parse(response.body)).toEqual(answer);
  });

  test('an absolute-form request target', async () => {
    const target = `${harness.simulator.url}/v1/account/keys`;
    const response = await sendRaw(harness.url, 'GET', target, {
      authorization: `Bearer ${harness.keys.beta}`,
    });
    expect(response.status).toBe(404);
    expect(harness.simulator.received).toEqual([]);
  });
});

describe('a known path with another method gets 405 with Allow', () => {
  test.each([
    ['PUT', '/v1/images/generations', 'POST'],
    ['GET', '/v1/images/generations', 'POST'],
    ['POST', `/v1/images/generations/${ID}`, 'GET'],
    ['DELETE', `/v1/images/generations/${ID}`, 'GET'],
    ['PATCH', `/v1/videos/generations/${ID}`, 'GET, DELETE'],
    ['HEAD', '/v1/account/keys', 'GET'],
    ['OPTIONS', '/v1/usage', 'GET'],
    ['DELETE', '/v1/account/usage', 'GET'],
  ])('%s %s', async (method, target, allow) => {
    const response = await sendRaw(harness.url, method, target, {
      authorization: `Bearer ${harness.keys.beta}`,
    });
    expect(response.status).toBe(405);
    expect(response.headers.allow).toBe(allow);
    if (method !== 'HEAD') {
      expect(JSON.parse(response.body)).toEqual({
        status: 405,
        error: {
          code: 'method_not_allowed',
          type: 'not_found_error',
          message: `${method} is not allowed here; use ${allow}`,
        },
      });
    }
    expect(harness.simulator.received).toEqual([]);
  });
});

test('a body on a GET is refused', async () => {
  const response = await sendRaw(
    harness.url,
    'GET',
    '/v1/account/keys',
    {
      authorization: `Bearer ${harness.keys.beta}`,
      'content-type': 'application/json',
      'content-length': '2',
    },
    '{}',
  );
  expect(response.status).toBe(400);
  expect(JSON.parse(response.body)).toMatchObject({ error: { code: 'body_not_allowed' } });
  expect(harness.simulator.received).toEqual([]);
});

test('every response carries X-Request-Id, errors included', async () => {
  const response = await sendRaw(harness.url, 'GET', '/nowhere');
  expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
});
