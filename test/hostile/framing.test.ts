// docs/security.md#the-http-edge-in-detail (RFC 9112 sections 6.1 and 6.3): a message whose framing could be read two ways is
// answered 400 in the envelope, its connection is closed, and nothing after it on that connection is
// served: every case is followed, in the same write, by a sound create that would reach the upstream if
// it were. Some refusals are Node's parser's (src/errors/client-error.ts answers them), the rest the
// gateway's (src/gateway/request-head.ts); these tests pin both, so a looser parser fails them.
import { afterEach, describe, expect, test } from 'vitest';
import { useGatewayHarness } from '../support/gateway-harness.ts';
import { exchangeRaw, type ExchangeOptions, type RawExchange } from '../support/raw-exchange.ts';
import { waitFor } from '../support/wait-for.ts';

const harness = useGatewayHarness();

const IMAGES = '/v1/images/generations';
const NOT_HTTP = 'the request is not valid HTTP';

// Messages are written before the harness starts (test tables); `send` puts the tenant's key in.
const KEY = '<alpha key>';

/** A create's head with the given framing lines (each ending in CRLF), then `body` as sent. */
function create(framing: string, body: string, version = 'HTTP/1.1'): string {
  return (
    `POST ${IMAGES} ${version}\r\nHost: gateway.test\r\nAuthorization: Bearer ${KEY}\r\n` +
    `Content-Type: application/json\r\n${framing}\r\n${body}`
  );
}

const chunked = (body: string) => `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;

const TAIL_BODY = '{"input":{"positivePrompt":"tail"}}';
/** A sound create: served if the gateway ever reads it, and then seen by the upstream. */
const tail = () => create(`Content-Length: ${TAIL_BODY.length}\r\n`, TAIL_BODY);

function send(message: string, options?: ExchangeOptions): Promise<RawExchange> {
  return exchangeRaw(harness.url, message.replaceAll(KEY, harness.keys.alpha), options);
}

function expectRefusedAndClosed(exchange: RawExchange, message: string): void {
  expect(exchange).toEqual({
    answers: [
      {
        status: 400,
        headers: expect.objectContaining({
          'content-type': expect.stringMatching(/^application\/json/) as unknown,
          'x-request-id': expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
          connection: 'close',
        }) as unknown,
        body: JSON.stringify({
          status: 400,
          error: { code: 'bad_request', type: 'validation_error', message },
        }),
      },
    ],
    closedByGateway: true,
  });
  expect(harness.simulator.received).toEqual([]);
}

async function inflightRequests(): Promise<number> {
  return (await harness.metrics.inflight.get()).values[0]?.value ?? Number.NaN;
}

afterEach(async () => {
  // The process stays healthy: a plain request is still served, and no dropped request stays counted.
  const response = await fetch(`${harness.url}/v1/account/usage`, {
    headers: { authorization: `Bearer ${harness.keys.alpha}` },
  });
  expect(response.status).toBe(200);
  await waitFor('no request in flight', async () => (await inflightRequests()) === 0);
});

describe("refused by Node's parser: 400, connection closed, nothing after it served", () => {
  test.each([
    [
      'Transfer-Encoding with Content-Length',
      'Transfer-Encoding: chunked\r\nContent-Length: 2\r\n',
      chunked('{}'),
    ],
    [
      'Content-Length before Transfer-Encoding',
      'Content-Length: 7\r\nTransfer-Encoding: chunked\r\n',
      chunked('{}'),
    ],
    ['two equal Content-Length fields', 'Content-Length: 2\r\nContent-Length: 2\r\n', '{}'],
    ['two different Content-Length fields', 'Content-Length: 2\r\nContent-Length: 4\r\n', '{}{}'],
    ['a Content-Length list', 'Content-Length: 2, 2\r\n', '{}'],
    ['a signed Content-Length', 'Content-Length: +2\r\n', '{}'],
    ['a hexadecimal Content-Length', 'Content-Length: 0x2\r\n', '{}'],
    ['chunked, then gzip', 'Transfer-Encoding: chunked, gzip\r\n', chunked('{}')],
    ['chunked twice in one field', 'Transfer-Encoding: chunked, chunked\r\n', chunked('{}')],
    ['chunked in two fields', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n', chunked('{}')],
    ['an empty Transfer-Encoding', 'Transfer-Encoding: \r\n', '{}'],
    ['a space before the colon of Transfer-Encoding', 'Transfer-Encoding : chunked\r\n', chunked('{}')],
    ['obs-fold in a field', 'X-Note: a\r\n b\r\nContent-Length: 2\r\n', '{}'],
    ['obs-fold in Transfer-Encoding', 'Transfer-Encoding:\r\n chunked\r\n', chunked('{}')],
    ['a chunk size that is not hexadecimal', 'Transfer-Encoding: chunked\r\n', 'zz\r\n{}\r\n0\r\n\r\n'],
    ['a chunk size with 0x', 'Transfer-Encoding: chunked\r\n', '0x2\r\n{}\r\n0\r\n\r\n'],
    ['a negative chunk size', 'Transfer-Encoding: chunked\r\n', '-2\r\n{}\r\n0\r\n\r\n'],
    ['a chunk size followed by a space', 'Transfer-Encoding: chunked\r\n', '2 \r\n{}\r\n0\r\n\r\n'],
    ['a chunk size beyond 64 bits', 'Transfer-Encoding: chunked\r\n', 'fffffffffffffffff\r\n{}\r\n0\r\n\r\n'],
    ['a chunk longer than its size', 'Transfer-Encoding: chunked\r\n', '1\r\n{}\r\n0\r\n\r\n'],
    ['chunk lines ended by bare LF', 'Transfer-Encoding: chunked\r\n', '2\n{}\n0\n\n'],
    ['a chunk extension ended by bare LF', 'Transfer-Encoding: chunked\r\n', '2;x=y\n{}\r\n0\r\n\r\n'],
    ['a bare LF ending a field', 'X-Note: a\nContent-Length: 2\r\n', '{}'],
    ['a bare CR inside a field', 'X-Note: a\rb\r\nContent-Length: 2\r\n', '{}'],
    ['a bare CR ending a field', 'X-Note: a\rContent-Length: 2\r\n', '{}'],
  ])('%s', async (_name, framing, body) => {
    expectRefusedAndClosed(await send(create(framing, body) + tail()), NOT_HTTP);
  });

  test.each([
    ['a request line ended by bare LF', `GET /v1/account/usage HTTP/1.1\nHost: gateway.test\r\n\r\n`],
    ['a head ended by bare LFs', `GET /v1/account/usage HTTP/1.1\nHost: gateway.test\n\n`],
    ['HTTP/1.2 in a request line', `GET /v1/account/usage HTTP/1.2\r\nHost: gateway.test\r\n\r\n`],
    ['a NUL in the request target', `GET /v1/account\u0000/usage HTTP/1.1\r\nHost: gateway.test\r\n\r\n`],
  ])('%s', async (_name, message) => {
    expectRefusedAndClosed(await send(message + tail()), NOT_HTTP);
  });
});

describe('let through by the parser, refused by the gateway: 400, connection closed, nothing after it served', () => {
  test.each([
    [
      'Transfer-Encoding on HTTP/1.0',
      create('Transfer-Encoding: chunked\r\n', chunked('{}'), 'HTTP/1.0'),
      'Transfer-Encoding is not allowed in an HTTP/1.0 request',
    ],
    [
      'Transfer-Encoding on a kept-alive HTTP/1.0 connection',
      create('Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n', chunked('{}'), 'HTTP/1.0'),
      'Transfer-Encoding is not allowed in an HTTP/1.0 request',
    ],
    [
      'Transfer-Encoding gzip alone',
      create('Transfer-Encoding: gzip\r\n', '{}'),
      'the only Transfer-Encoding accepted is chunked',
    ],
    [
      'Transfer-Encoding identity',
      create('Transfer-Encoding: identity\r\n', '{}'),
      'the only Transfer-Encoding accepted is chunked',
    ],
    [
      'a coding that only looks like chunked',
      create('Transfer-Encoding: xchunked\r\n', chunked('{}')),
      'the only Transfer-Encoding accepted is chunked',
    ],
    [
      'a coding before chunked',
      create('Transfer-Encoding: gzip, chunked\r\n', chunked('{}')),
      'the only Transfer-Encoding accepted is chunked',
    ],
    [
      'a coding before chunked, in two fields',
      create('Transfer-Encoding: deflate\r\nTransfer-Encoding: chunked\r\n', chunked('{}')),
      'the only Transfer-Encoding accepted is chunked',
    ],
    [
      'an HTTP/1.1 request without Host',
      `POST ${IMAGES} HTTP/1.1\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
      'an HTTP/1.1 request carries exactly one Host field',
    ],
    [
      'two Host fields',
      create('Host: other.test\r\nContent-Length: 2\r\n', '{}'),
      'an HTTP/1.1 request carries exactly one Host field',
    ],
    [
      'an HTTP/0.9 request line',
      `GET /v1/account/usage\r\n\r\n`,
      'only HTTP/1.1 and HTTP/1.0 requests are served',
    ],
    [
      'HTTP/2.0 in a request line',
      create('Content-Length: 2\r\n', '{}', 'HTTP/2.0'),
      'only HTTP/1.1 and HTTP/1.0 requests are served',
    ],
  ])('%s', async (_name, message, expected) => {
    expectRefusedAndClosed(await send(message + tail()), expected);
  });

  test('the pipelined requests Node had already parsed are dropped unanswered, and never counted', async () => {
    const refused = create(
      'Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n',
      chunked('{}'),
      'HTTP/1.0',
    );
    const before = harness.logLines.length;
    expectRefusedAndClosed(
      await send(refused + tail() + tail() + tail()),
      'Transfer-Encoding is not allowed in an HTTP/1.0 request',
    );
    const requestLines = harness.logLines
      .slice(before)
      .map((line) => JSON.parse(line) as { msg: string; status?: number })
      .filter((line) => line.msg === 'request');
    expect(requestLines.map((line) => line.status)).toEqual([400]);
  });
});

describe('sound framing is served as before', () => {
  test('pipelined sound requests are all served, in order, on one connection', async () => {
    const exchange = await send(tail() + create('Content-Length: 2\r\n', '{}'), {
      answers: 2,
    });
    expect(exchange.answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect(harness.simulator.received).toHaveLength(2);
  });

  test.each([
    ['chunked in capitals, with spaces around it', 'Transfer-Encoding:  CHUNKED \r\n', chunked('{}')],
    [
      'a chunk extension (RFC 9112 section 7.1.1)',
      'Transfer-Encoding: chunked\r\n',
      '2;name=value\r\n{}\r\n0\r\n\r\n',
    ],
    [
      'a trailer field after the last chunk',
      'Transfer-Encoding: chunked\r\n',
      '2\r\n{}\r\n0\r\nX-Trailer: 1\r\n\r\n',
    ],
  ])('%s', async (_name, framing, body) => {
    const exchange = await send(create(framing, body), { answers: 1 });
    expect(exchange.answers.map((answer) => answer.status)).toEqual([200]);
    expect(harness.simulator.received.map((request) => request.body.toString())).toEqual([
      expect.stringMatching(/^\{"requestId":"[0-9a-f-]{36}"\}$/),
    ]);
  });

  test('an HTTP/1.0 request that is not kept alive is answered; the bytes after it are not', async () => {
    const exchange = await send(create('Content-Length: 2\r\n', '{}', 'HTTP/1.0') + tail());
    expect(exchange.answers.map((answer) => [answer.status, answer.headers.connection])).toEqual([
      [200, 'close'],
    ]);
    expect(exchange.closedByGateway).toBe(true);
    expect(harness.simulator.received).toHaveLength(1);
  });

  test('broken bytes behind a request in flight: that request is answered first, then the 400', async () => {
    harness.simulator.faults.set({ delayMs: 200, times: 1 });
    const exchange = await send(`${tail()}BROKEN\u0000\r\n\r\n`);
    expect(exchange.answers.map((answer) => answer.status)).toEqual([200, 400]);
    expect(JSON.parse(exchange.answers[1]!.body)).toEqual({
      status: 400,
      error: { code: 'bad_request', type: 'validation_error', message: NOT_HTTP },
    });
    expect(exchange.closedByGateway).toBe(true);
    expect(harness.simulator.received).toHaveLength(1);
  });
});
