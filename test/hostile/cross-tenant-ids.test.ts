// docs/security.md#across-tenants against a tenant that tries another tenant's generation id in every spelling it can
// think of: reads and cancels get 404 (request_not_found for a UUID in any letter case, route_not_found
// for anything that is not one), a create with it gets 409, and nothing reaches the upstream. The owner
// still reads its own generation afterwards, in any letter case.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, test } from 'vitest';
import { useGatewayHarness } from '../support/gateway-harness.ts';
import { sendRaw } from '../support/raw-http.ts';
import {
  ROUTE_ID_NOT_UUID,
  ROUTE_NOT_FOUND,
  ROUTE_QUERY_STRING,
  ROUTE_TRAILING_SLASH,
} from '../support/route-not-found.ts';

const harness = useGatewayHarness();

const IMAGES = '/v1/images/generations';
const VIDEOS = '/v1/videos/generations';

// alpha's generations, created once; ids are lower case as the gateway records them.
const owned = { image: '', video: '' };

async function createAs(key: string, path: string, body: object) {
  const response = await fetch(`${harness.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

beforeAll(async () => {
  owned.image = randomUUID();
  owned.video = randomUUID();
  expect((await createAs(harness.keys.alpha, IMAGES, { requestId: owned.image })).status).toBe(200);
  expect((await createAs(harness.keys.alpha, VIDEOS, { requestId: owned.video, duration: 5 })).status).toBe(
    200,
  );
});

const REQUEST_NOT_FOUND = 'request_not_found';
/** request_not_found, or the whole 404 route_not_found body (the message names a near miss's mistake). */
type NotFound = typeof REQUEST_NOT_FOUND | typeof ROUTE_NOT_FOUND;

/** The whole 404 body; a UUID's own spelling is named in request_not_found's message. */
function notFound(expected: NotFound, spelledId: string) {
  if (expected !== REQUEST_NOT_FOUND) return expected;
  const message = `request ${spelledId} was not found`;
  return { status: 404, error: { code: REQUEST_NOT_FOUND, type: 'not_found_error', message } };
}

const upper = (id: string) => id.toUpperCase();
const mixed = (id: string) =>
  id.replace(/./g, (char: string, index: number) => (index % 2 === 0 ? char.toUpperCase() : char));

/** Spellings of `id` in a request target, each with what the gateway answers another tenant. */
const TARGET_SPELLINGS: [string, (id: string) => string, NotFound][] = [
  ['as recorded', (id) => id, REQUEST_NOT_FOUND],
  ['in upper case', upper, REQUEST_NOT_FOUND],
  ['in mixed case', mixed, REQUEST_NOT_FOUND],
  ['in braces', (id) => `{${id}}`, ROUTE_ID_NOT_UUID],
  ['as a URN', (id) => `urn:uuid:${id}`, ROUTE_ID_NOT_UUID],
  ['without dashes', (id) => id.replaceAll('-', ''), ROUTE_ID_NOT_UUID],
  ['with its dashes percent-encoded', (id) => id.replaceAll('-', '%2D'), ROUTE_ID_NOT_UUID],
  [
    'entirely percent-encoded',
    (id) => id.replace(/./g, (char) => `%${char.charCodeAt(0).toString(16)}`),
    ROUTE_ID_NOT_UUID,
  ],
  ['after an encoded space', (id) => `%20${id}`, ROUTE_ID_NOT_UUID],
  ['before an encoded tab', (id) => `${id}%09`, ROUTE_ID_NOT_UUID],
  ['with a trailing slash', (id) => `${id}/`, ROUTE_TRAILING_SLASH],
  ['with a query string', (id) => `${id}?tenant=alpha`, ROUTE_QUERY_STRING],
  ['after a dot segment', (id) => `./${id}`, ROUTE_NOT_FOUND],
];

describe("another tenant's id in a read or a cancel: 404, nothing forwarded", () => {
  test.each(TARGET_SPELLINGS)('GET of an image id %s', async (_name, spell, expected) => {
    for (const key of [harness.keys.gamma, harness.keys.beta]) {
      const response = await sendRaw(harness.url, 'GET', `${IMAGES}/${spell(owned.image)}`, {
        authorization: `Bearer ${key}`,
      });
      expect({ status: response.status, body: JSON.parse(response.body) as unknown }).toEqual({
        status: 404,
        body: notFound(expected, spell(owned.image)),
      });
      expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
    expect(harness.simulator.received).toEqual([]);
  });

  test.each(TARGET_SPELLINGS)('DELETE of a video id %s', async (_name, spell, expected) => {
    const response = await sendRaw(harness.url, 'DELETE', `${VIDEOS}/${spell(owned.video)}`, {
      authorization: `Bearer ${harness.keys.gamma}`,
    });
    expect({ status: response.status, body: JSON.parse(response.body) as unknown }).toEqual({
      status: 404,
      body: notFound(expected, spell(owned.video)),
    });
    expect(harness.simulator.received).toEqual([]);
  });

  test('a raw space or tab inside the target is not HTTP: 400, nothing forwarded', async () => {
    for (const target of [`${IMAGES}/ ${owned.image}`, `${IMAGES}/\t${owned.image}`]) {
      const response = await sendRaw(harness.url, 'GET', target, {
        authorization: `Bearer ${harness.keys.gamma}`,
      });
      expect(response.status).toBe(400);
      expect(JSON.parse(response.body)).toEqual({
        status: 400,
        error: { code: 'bad_request', type: 'validation_error', message: 'the request is not valid HTTP' },
      });
    }
    expect(harness.simulator.received).toEqual([]);
  });
});

describe("another tenant's id in a create: 409 in any letter case, 400 when it is not a UUID", () => {
  const conflict = (spelledId: string) => ({
    status: 409,
    error: {
      code: 'request_id_conflict',
      type: 'conflict_error',
      message: `requestId ${spelledId} is already in use; submit with another requestId`,
      param: 'requestId',
    },
  });

  test.each([
    ['as recorded', (id: string) => id],
    ['in upper case', upper],
    ['in mixed case', mixed],
  ])('%s: 409 request_id_conflict', async (_name, spell) => {
    expect(await createAs(harness.keys.gamma, IMAGES, { requestId: spell(owned.image) })).toEqual({
      status: 409,
      body: conflict(spell(owned.image)),
    });
    expect(
      await createAs(harness.keys.gamma, VIDEOS, { requestId: spell(owned.video), duration: 5 }),
    ).toEqual({
      status: 409,
      body: conflict(spell(owned.video)),
    });
    expect(harness.simulator.received).toEqual([]);
  });

  test.each([
    ['in braces', (id: string) => `{${id}}`],
    ['as a URN', (id: string) => `urn:uuid:${id}`],
    ['with a space before it', (id: string) => ` ${id}`],
    ['with a newline after it', (id: string) => `${id}\n`],
    ['without dashes', (id: string) => id.replaceAll('-', '')],
  ])('%s: 400 invalid_parameter on requestId', async (_name, spell) => {
    const answer = await createAs(harness.keys.gamma, IMAGES, { requestId: spell(owned.image) });
    expect(answer).toMatchObject({
      status: 400,
      body: {
        status: 400,
        error: { code: 'invalid_parameter', type: 'validation_error', param: 'requestId' },
      },
    });
    expect(harness.simulator.received).toEqual([]);
  });
});

test('the owner still reads its own generation, in any letter case', async () => {
  for (const spelling of [owned.image, upper(owned.image), mixed(owned.image)]) {
    const response = await sendRaw(harness.url, 'GET', `${IMAGES}/${spelling}`, {
      authorization: `Bearer ${harness.keys.alpha}`,
    });
    expect(response.status).toBe(200);
  }
  // Always forwarded as the id the upstream knows: lower case.
  expect(harness.simulator.received.map((request) => request.url)).toEqual(
    Array.from({ length: 3 }, () => `${IMAGES}/${owned.image}`),
  );
});
