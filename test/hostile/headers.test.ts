// Header fields a hostile client repeats or inflates (docs/security.md#the-http-edge-in-detail). Node keeps the first of
// several Authorization, Content-Type or Host fields and drops the others, where a proxy in front may
// keep another: the gateway refuses them instead (src/gateway/request-head.ts). Oversized and numerous
// fields are refused by Node's parser with 431, answered in the envelope.
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, test } from 'vitest';
import { useGatewayHarness } from '../support/gateway-harness.ts';
import { exchangeRaw, type ExchangeOptions, type RawExchange } from '../support/raw-exchange.ts';

const harness = useGatewayHarness();

const IMAGES = '/v1/images/generations';
const USAGE = '/v1/account/usage';
const UUID = /^[0-9a-f-]{36}$/;

// Keys are known only once the harness has started; tables name them and `send` puts them in.
const KEYS = { alpha: '<alpha>', gamma: '<gamma>' } as const;

function send(message: string, options?: ExchangeOptions): Promise<RawExchange> {
  const bytes = message.replaceAll(KEYS.alpha, harness.keys.alpha).replaceAll(KEYS.gamma, harness.keys.gamma);
  return exchangeRaw(harness.url, bytes, options);
}

function get(path: string, fields: string): string {
  return `GET ${path} HTTP/1.1\r\nHost: gateway.test\r\n${fields}\r\n`;
}

function post(path: string, fields: string, body: string): string {
  return `POST ${path} HTTP/1.1\r\nHost: gateway.test\r\n${fields}Content-Length: ${body.length}\r\n\r\n${body}`;
}

function invalidRequest(message: string) {
  return { status: 400, error: { code: 'invalid_request', type: 'validation_error', message } };
}

const ONE_AUTHORIZATION = invalidRequest('send one Authorization field, not several');
const ONE_CONTENT_TYPE = invalidRequest('send one Content-Type field, not several');

afterEach(async () => {
  const response = await fetch(`${harness.url}${USAGE}`, {
    headers: { authorization: `Bearer ${harness.keys.alpha}` },
  });
  expect(response.status).toBe(200);
});

describe('several Authorization fields: 400 invalid_request, never served as any tenant', () => {
  test.each([
    ['the same key twice', `Authorization: Bearer ${KEYS.alpha}\r\nAuthorization: Bearer ${KEYS.alpha}\r\n`],
    ["two tenants' keys", `Authorization: Bearer ${KEYS.alpha}\r\nAuthorization: Bearer ${KEYS.gamma}\r\n`],
    [
      'an unknown key, then a valid one',
      `Authorization: Bearer ggk_unknown\r\nAuthorization: Bearer ${KEYS.alpha}\r\n`,
    ],
    ['a valid key, then an empty field', `Authorization: Bearer ${KEYS.alpha}\r\nAuthorization: \r\n`],
    [
      'names spelt in other cases',
      `authorization: Bearer ${KEYS.alpha}\r\nAUTHORIZATION: Bearer ${KEYS.gamma}\r\n`,
    ],
    [
      'fields apart',
      `Authorization: Bearer ${KEYS.alpha}\r\nAccept: */*\r\nAuthorization: Bearer ${KEYS.gamma}\r\n`,
    ],
  ])('%s', async (_name, fields) => {
    const before = harness.logLines.length;
    // A sound request behind it on the same connection: the framing is not in doubt, so it is served.
    const exchange = await send(get(USAGE, fields) + get(USAGE, `Authorization: Bearer ${KEYS.alpha}\r\n`), {
      answers: 2,
    });
    expect(exchange.answers.map((answer) => answer.status)).toEqual([400, 200]);
    const [refusal] = exchange.answers;
    expect(JSON.parse(refusal!.body)).toEqual(ONE_AUTHORIZATION);
    expect(refusal!.headers['x-request-id']).toMatch(UUID);
    expect(refusal!.headers['www-authenticate']).toBeUndefined();
    expect(refusal!.headers['x-ratelimit-limit']).toBeUndefined();
    const refusedLine = harness.logLines
      .slice(before)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.reqId === refusal!.headers['x-request-id']);
    expect(refusedLine).toMatchObject({ msg: 'request', status: 400 });
    expect(refusedLine?.tenant).toBeUndefined();
  });

  test('on a create: nothing forwarded, and the requestId is not claimed', async () => {
    const body = JSON.stringify({ requestId: randomUUID() });
    const fields =
      `Authorization: Bearer ${KEYS.alpha}\r\nAuthorization: Bearer ${KEYS.gamma}\r\n` +
      'Content-Type: application/json\r\n';
    const exchange = await send(post(IMAGES, fields, body), { answers: 1 });
    expect(exchange.answers.map((answer) => JSON.parse(answer.body) as unknown)).toEqual([ONE_AUTHORIZATION]);
    expect(harness.simulator.received).toEqual([]);
    // The same id is free for either tenant at once.
    const resubmitted = await fetch(`${harness.url}${IMAGES}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness.keys.gamma}`, 'content-type': 'application/json' },
      body,
    });
    expect(resubmitted.status).toBe(200);
  });

  test("on a read of one tenant's generation: refused, not served to either", async () => {
    const created = await fetch(`${harness.url}${IMAGES}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness.keys.alpha}`, 'content-type': 'application/json' },
      body: '{}',
    });
    const { data } = (await created.json()) as { data: { requestId: string } };
    harness.simulator.clearReceived();
    const fields = `Authorization: Bearer ${KEYS.gamma}\r\nAuthorization: Bearer ${KEYS.alpha}\r\n`;
    const exchange = await send(get(`${IMAGES}/${data.requestId}`, fields), { answers: 1 });
    expect(exchange.answers.map((answer) => JSON.parse(answer.body) as unknown)).toEqual([ONE_AUTHORIZATION]);
    expect(harness.simulator.received).toEqual([]);
  });
});

describe('other repeated fields', () => {
  test('two Content-Type fields: 400 invalid_request, nothing forwarded', async () => {
    const fields =
      `Authorization: Bearer ${KEYS.alpha}\r\nContent-Type: application/json\r\n` +
      'Content-Type: text/plain\r\n';
    const exchange = await send(post(IMAGES, fields, '{}'), { answers: 1 });
    expect(exchange.answers.map((answer) => [answer.status, JSON.parse(answer.body) as unknown])).toEqual([
      [400, ONE_CONTENT_TYPE],
    ]);
    expect(harness.simulator.received).toEqual([]);
  });

  test('two X-Request-Id fields: served, under an id the gateway generates (neither is echoed)', async () => {
    const fields = `Authorization: Bearer ${KEYS.alpha}\r\nX-Request-Id: first\r\nX-Request-Id: second\r\n`;
    const exchange = await send(get(USAGE, fields), { answers: 1 });
    expect(exchange.answers[0]!.status).toBe(200);
    expect(exchange.answers[0]!.headers['x-request-id']).toMatch(UUID);
  });

  test('one X-Request-Id that is too long or not plain: replaced by a generated one', async () => {
    for (const offered of ['x'.repeat(129), 'a b', 'id;drop', '{braces}']) {
      const exchange = await send(
        get(USAGE, `Authorization: Bearer ${KEYS.alpha}\r\nX-Request-Id: ${offered}\r\n`),
        {
          answers: 1,
        },
      );
      expect(exchange.answers[0]!.headers['x-request-id']).toMatch(UUID);
    }
  });
});

describe('oversized and numerous header fields: 431 in the envelope, connection closed', () => {
  const TOO_LARGE = {
    status: 431,
    error: {
      code: 'request_headers_too_large',
      type: 'validation_error',
      message: 'the request headers are larger than this gateway accepts',
    },
  };

  test.each([
    ['one field of 20 KB', `X-Padding: ${'p'.repeat(20_000)}\r\n`],
    ['a thousand small fields', 'X-A: 1\r\n'.repeat(1000)],
    ['a request target of 20 KB', ''],
  ])('%s', async (name, fields) => {
    const path = name.startsWith('a request target') ? `${USAGE}?${'q'.repeat(20_000)}` : USAGE;
    const exchange = await send(
      get(path, `Authorization: Bearer ${KEYS.alpha}\r\n${fields}`) + get(USAGE, ''),
    );
    expect(exchange).toEqual({
      answers: [
        {
          status: 431,
          headers: expect.objectContaining({
            'x-request-id': expect.stringMatching(UUID) as unknown,
            connection: 'close',
          }) as unknown,
          body: JSON.stringify(TOO_LARGE),
        },
      ],
      closedByGateway: true,
    });
    expect(harness.simulator.received).toEqual([]);
  });

  test('a head of 12 KB is still served', async () => {
    const fields = `Authorization: Bearer ${KEYS.alpha}\r\nX-Padding: ${'p'.repeat(12_000)}\r\n`;
    const exchange = await send(get(USAGE, fields), { answers: 1 });
    expect(exchange.answers[0]!.status).toBe(200);
  });
});
