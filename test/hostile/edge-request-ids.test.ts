// The answers Node's parser leaves to gengate (src/errors/client-error.ts) carry the client's
// X-Request-Id when it offered one sane id that can be read, as every other answer does, and the private
// cache headers; each is logged under that id with the client's address. They used to carry a fresh id
// whatever the client sent, so a client could not find its refused request in the gateway's log.
import { connect } from 'node:net';
import { expect, test } from 'vitest';
import { useGatewayHarness } from '../support/gateway-harness.ts';
import { exchangeRaw, type RawAnswer } from '../support/raw-exchange.ts';
import { waitFor } from '../support/wait-for.ts';

const REQUEST_TIMEOUT_MS = 1_000;
const harness = useGatewayHarness({ requestTimeoutMs: REQUEST_TIMEOUT_MS });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function head(requestLine: string, fields: string): string {
  return `${requestLine}\r\nHost: gateway.test\r\nAuthorization: Bearer ${harness.keys.alpha}\r\n${fields}\r\n`;
}

async function refusal(bytes: string): Promise<RawAnswer> {
  const exchange = await exchangeRaw(harness.url, bytes);
  expect(exchange.closedByGateway).toBe(true);
  expect(exchange.answers).toHaveLength(1);
  return exchange.answers[0]!;
}

function expectPrivate(answer: RawAnswer): void {
  expect(answer.headers['cache-control']).toBe('private, no-store');
  expect(answer.headers.vary).toBe('Authorization');
}

const logLineOf = (reqId: string) =>
  harness.logLines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .find((line) => line.msg === 'client error' && line.reqId === reqId);

test.each([
  [
    'Transfer-Encoding with Content-Length',
    'POST /v1/images/generations HTTP/1.1',
    'Content-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n',
    '0\r\n\r\n',
    400,
  ],
  ['an unknown method on a known path', 'FOO /v1/account/usage HTTP/1.1', '', '', 405],
])(
  '%s: the client’s X-Request-Id, the private headers, a log line',
  async (name, line, fields, body, status) => {
    const reqId = `edge-${status}`;
    const answer = await refusal(head(line, `X-Request-Id: ${reqId}\r\n${fields}`) + body);
    expect([name, answer.status, answer.headers['x-request-id']]).toEqual([name, status, reqId]);
    expectPrivate(answer);
    await waitFor('its log line', () => logLineOf(reqId) !== undefined);
    expect(logLineOf(reqId)).toMatchObject({ status, clientAddress: '127.0.0.1' });
  },
);

test.each([
  ['an id that is not sane', 'X-Request-Id: <script>\r\n'],
  ['two ids', 'X-Request-Id: one\r\nX-Request-Id: two\r\n'],
])('%s: a fresh id instead', async (_name, fields) => {
  const answer = await refusal(head('FOO /v1/account/usage HTTP/1.1', fields));
  expect(answer.status).toBe(405);
  expect(answer.headers['x-request-id']).toMatch(UUID);
});

// Whatever bytes the id itself carries, none reaches the answer's head: the parser refuses the field, and
// what is echoed passes the sane-id rule (no CR, LF, NUL or byte beyond ASCII). llhttp serves bytes beyond
// ASCII in a value (obs-text), and Fastify's id then follows the same rule: a fresh one.
test.each([
  ['a NUL', 'X-Request-Id: a\u0000b\r\n'],
  ['a bare LF', 'X-Request-Id: a\nSet-Cookie: x=1\r\n'],
  ['a bare CR', 'X-Request-Id: a\rSet-Cookie: x=1\r\n'],
])('an id holding %s: a fresh id, nothing of it in the answer', async (_name, fields) => {
  const bytes = Buffer.from(head('GET /v1/account/usage HTTP/1.1', fields), 'latin1');
  const exchange = await exchangeRaw(harness.url, bytes);
  expect(exchange.answers).toHaveLength(1);
  const [answer] = exchange.answers;
  expect(answer!.status).toBe(400);
  expect(answer!.headers['x-request-id']).toMatch(UUID);
  expect(answer!.headers['set-cookie']).toBeUndefined();
});

test("a broken head after a sound request: not the earlier request's id", async () => {
  const sound = head('GET /v1/account/usage HTTP/1.1', 'X-Request-Id: first\r\n');
  const exchange = await exchangeRaw(harness.url, `${sound}\u0001BAD / HTTP/1.1\r\n\r\n`);
  expect(exchange.answers.map((answer) => answer.status)).toEqual([200, 400]);
  expect(exchange.answers[0]!.headers['x-request-id']).toBe('first');
  expect(exchange.answers[1]!.headers['x-request-id']).toMatch(UUID);
});

test('a body too slow: 408 with the id its head offered', async () => {
  const { hostname, port } = new URL(harness.url);
  const socket = connect(Number(port), hostname);
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  socket.write(
    head(
      'POST /v1/images/generations HTTP/1.1',
      'X-Request-Id: edge-408\r\nContent-Type: application/json\r\nContent-Length: 100\r\n',
    ) + '{',
  );
  await closed;
  expect(received).toMatch(/^HTTP\/1\.1 408 /);
  expect(received).toContain('\r\nX-Request-Id: edge-408\r\n');
  expect(received).toContain('\r\nCache-Control: private, no-store\r\n');
});
