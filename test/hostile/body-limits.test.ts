// docs/validation.md#transport at the HTTP edge: a body over `server.bodyLimitBytes` is refused with 413
// as soon as the gateway can tell (from Content-Length, before any of the body is read, or mid-stream
// for a chunked upload), and a body that is not JSON with 415; each answer is the whole envelope with an
// X-Request-Id, nothing reaches the upstream, and the gateway goes on serving.
import { afterEach, describe, expect, test } from 'vitest';
import { useGatewayHarness } from '../support/gateway-harness.ts';
import { exchangeRaw } from '../support/raw-exchange.ts';
import { IMAGES, postUnfinishedJson } from '../validation/validation-client.ts';

const BODY_LIMIT_BYTES = 1024;
const harness = useGatewayHarness({ bodyLimitBytes: BODY_LIMIT_BYTES });

const UUID = /^[0-9a-f-]{36}$/;
const TOO_LARGE = {
  status: 413,
  error: {
    code: 'payload_too_large',
    type: 'validation_error',
    message: 'the request body is larger than this gateway accepts',
  },
};

afterEach(async () => {
  expect(harness.simulator.received).toEqual([]);
  const response = await fetch(`${harness.url}/v1/account/usage`, {
    headers: { authorization: `Bearer ${harness.keys.alpha}` },
  });
  expect(response.status).toBe(200);
});

describe('413 payload_too_large, before the body is whole', () => {
  test.each([
    ['a Content-Length of one byte over the limit, no body sent', String(BODY_LIMIT_BYTES + 1)],
    ['a Content-Length of 1 GB, no body sent', String(1024 ** 3)],
    ['a Content-Length beyond 2^53, no body sent', '9007199254740993'],
  ])('%s', async (_name, contentLength) => {
    const answer = await postUnfinishedJson(harness, IMAGES, { 'content-length': contentLength }, '');
    expect({ status: answer.status, body: JSON.parse(answer.body) as unknown }).toEqual({
      status: 413,
      body: TOO_LARGE,
    });
    expect(answer.headers['x-request-id']).toMatch(UUID);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  test('a Content-Length beyond 64 bits is not HTTP: 400 bad_request, connection closed', async () => {
    const exchange = await exchangeRaw(
      harness.url,
      `POST ${IMAGES} HTTP/1.1\r\nHost: gateway.test\r\nContent-Type: application/json\r\n` +
        'Content-Length: 99999999999999999999\r\n\r\n{}',
    );
    expect(exchange.answers.map((answer) => [answer.status, JSON.parse(answer.body) as unknown])).toEqual([
      [
        400,
        {
          status: 400,
          error: { code: 'bad_request', type: 'validation_error', message: 'the request is not valid HTTP' },
        },
      ],
    ]);
    expect(exchange.closedByGateway).toBe(true);
  });

  test('a chunked upload, as soon as it passes the limit (its end never sent)', async () => {
    const chunk = `${(600).toString(16)}\r\n${' '.repeat(600)}\r\n`;
    const answer = await postUnfinishedJson(
      harness,
      IMAGES,
      { 'transfer-encoding': 'chunked' },
      chunk + chunk,
    );
    expect({ status: answer.status, body: JSON.parse(answer.body) as unknown }).toEqual({
      status: 413,
      body: TOO_LARGE,
    });
    expect(answer.headers['x-request-id']).toMatch(UUID);
  });
});

describe('415 unsupported_media_type for anything but JSON, before the body is read', () => {
  test.each([
    ['text/plain', 'request bodies must be application/json'],
    ['application/xml', 'request bodies must be application/json'],
    ['multipart/form-data; boundary=x', 'request bodies must be application/json'],
    ['application/json; charset=iso-8859-1', 'request bodies must be application/json in UTF-8'],
  ])('%s', async (contentType, message) => {
    const exchange = await exchangeRaw(
      harness.url,
      `POST ${IMAGES} HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer ${harness.keys.alpha}\r\n` +
        `Content-Type: ${contentType}\r\nContent-Length: 2\r\n\r\n{}`,
      { answers: 1 },
    );
    const [answer] = exchange.answers;
    expect({ status: answer?.status, body: JSON.parse(answer?.body ?? 'null') as unknown }).toEqual({
      status: 415,
      body: { status: 415, error: { code: 'unsupported_media_type', type: 'validation_error', message } },
    });
    expect(answer?.headers['x-request-id']).toMatch(UUID);
  });
});
