// docs/validation.md#transport rules: JSON in UTF-8 only, no compressed bodies, the body limit enforced
// before the whole body is read (by Content-Length and while streaming), and no body on GET or DELETE.
// Every refusal is proven never to have reached the upstream.
import { randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { useGatewayHarness } from '../support/gateway-harness.ts';
import { sendRaw } from '../support/raw-http.ts';
import {
  IMAGES,
  VIDEOS,
  errorBody,
  expectForwardedVerbatim,
  expectRefused,
  postJson,
  postUnfinishedJson,
} from './validation-client.ts';

const BODY_LIMIT_BYTES = 1024;

const harness = useGatewayHarness({ bodyLimitBytes: BODY_LIMIT_BYTES });

const TOO_LARGE = errorBody(413, 'payload_too_large', 'the request body is larger than this gateway accepts');
const NOT_JSON = errorBody(415, 'unsupported_media_type', 'request bodies must be application/json');
const NOT_UTF8 = errorBody(415, 'unsupported_media_type', 'request bodies must be application/json in UTF-8');
const COMPRESSED = errorBody(415, 'unsupported_media_type', 'compressed request bodies are not accepted');

/** A valid image request of exactly `bytes` bytes. */
function bodyOfSize(bytes: number): string {
  const frame = '{"input":{"positivePrompt":""}}';
  return `{"input":{"positivePrompt":"${'x'.repeat(bytes - frame.length)}"}}`;
}

describe('Content-Type', () => {
  test.each([
    'application/json',
    'application/json; charset=utf-8',
    'application/json;charset=UTF-8',
    'application/json; charset="utf-8"',
  ])('%s is accepted', async (contentType) => {
    const answer = await postJson(harness, IMAGES, '{}', { 'content-type': contentType });
    expect(answer.status).toBe(200);
    expectForwardedVerbatim(harness, IMAGES, '{}');
    // The upstream is told plainly what it gets, whatever spelling the client used.
    expect(harness.simulator.received[0]!.headers['content-type']).toBe('application/json');
  });

  test.each([
    ['text/plain', NOT_JSON],
    ['text/json', NOT_JSON],
    ['application/x-www-form-urlencoded', NOT_JSON],
    ['multipart/form-data; boundary=x', NOT_JSON],
    ['application/json-patch+json', NOT_JSON],
    ['application/vnd.api+json', NOT_JSON],
    ['application/jsonx', NOT_JSON],
    ['application/json; charset=latin1', NOT_UTF8],
    ['application/json; charset=utf-16', NOT_UTF8],
  ])('%s: 415', async (contentType, expected) => {
    expectRefused(harness, await postJson(harness, IMAGES, '{}', { 'content-type': contentType }), expected);
  });

  // A raw socket: fetch would add its own text/plain Content-Type to a string body.
  test.each([
    ['with a body', '{}', { 'content-length': '2' }, NOT_JSON],
    [
      'and no body',
      '',
      { 'content-length': '0' },
      errorBody(415, 'unsupported_media_type', 'send a JSON object with Content-Type: application/json'),
    ],
  ])('no Content-Type %s: 415', async (_name, body, headers, expected) => {
    const response = await sendRaw(
      harness.url,
      'POST',
      IMAGES,
      { authorization: `Bearer ${harness.keys.alpha}`, ...headers },
      body,
    );
    expect({ status: response.status, body: JSON.parse(response.body) as unknown }).toEqual({
      status: 415,
      body: expected,
    });
    expect(harness.simulator.received).toEqual([]);
  });
});

describe('Content-Encoding', () => {
  test.each(['gzip', 'deflate', 'br', 'zstd', 'GZIP', 'identity, gzip'])('%s: 415', async (encoding) => {
    const answer = await postJson(harness, IMAGES, '{}', {
      'content-type': 'application/json',
      'content-encoding': encoding,
    });
    expectRefused(harness, answer, COMPRESSED);
  });

  test.each(['identity', 'IDENTITY'])('%s is accepted and not passed on', async (encoding) => {
    const answer = await postJson(harness, IMAGES, '{}', {
      'content-type': 'application/json',
      'content-encoding': encoding,
    });
    expect(answer.status).toBe(200);
    expectForwardedVerbatim(harness, IMAGES, '{}');
    expect(harness.simulator.received[0]!.headers['content-encoding']).toBeUndefined();
  });
});

describe('body limit', () => {
  test('a body of exactly the limit is accepted', async () => {
    const body = bodyOfSize(BODY_LIMIT_BYTES);
    expect(Buffer.byteLength(body)).toBe(BODY_LIMIT_BYTES);
    expect((await postJson(harness, IMAGES, body)).status).toBe(200);
    expectForwardedVerbatim(harness, IMAGES, body);
  });

  test('one byte more: 413', async () => {
    expectRefused(harness, await postJson(harness, IMAGES, bodyOfSize(BODY_LIMIT_BYTES + 1)), TOO_LARGE);
  });

  test('a Content-Length over the limit is refused before any of the body is sent', async () => {
    const response = await postUnfinishedJson(
      harness,
      IMAGES,
      { 'content-length': String(1024 * 1024 * 1024) },
      '',
    );
    expect(response.status).toBe(413);
    expect(JSON.parse(response.body)).toEqual(TOO_LARGE);
    expect(harness.simulator.received).toEqual([]);
  });

  test('a chunked upload is refused as soon as it passes the limit, before it ends', async () => {
    const chunk = 'x'.repeat(700);
    const chunked = `${(700).toString(16)}\r\n${chunk}\r\n`.repeat(2); // no final 0-length chunk
    const response = await postUnfinishedJson(harness, IMAGES, { 'transfer-encoding': 'chunked' }, chunked);
    expect(response.status).toBe(413);
    expect(JSON.parse(response.body)).toEqual(TOO_LARGE);
    expect(harness.simulator.received).toEqual([]);
  });
});

describe('no body on GET or DELETE', () => {
  test('GET with a JSON body: 400 body_not_allowed', async () => {
    const response = await sendRaw(
      harness.url,
      'GET',
      '/v1/account/usage',
      {
        authorization: `Bearer ${harness.keys.alpha}`,
        'content-type': 'application/json',
        'content-length': '2',
      },
      '{}',
    );
    expect({ status: response.status, body: JSON.parse(response.body) as unknown }).toEqual({
      status: 400,
      body: errorBody(400, 'body_not_allowed', 'GET requests must not carry a body'),
    });
    expect(harness.simulator.received).toEqual([]);
  });

  test('GET with a chunked (even empty) body: 400 body_not_allowed', async () => {
    const response = await sendRaw(
      harness.url,
      'GET',
      '/v1/account/usage',
      { authorization: `Bearer ${harness.keys.alpha}`, 'transfer-encoding': 'chunked' },
      '0\r\n\r\n',
    );
    expect({ status: response.status, body: JSON.parse(response.body) as unknown }).toEqual({
      status: 400,
      body: errorBody(400, 'body_not_allowed', 'GET requests must not carry a body'),
    });
    expect(harness.simulator.received).toEqual([]);
  });

  test('DELETE with a body: 400 body_not_allowed', async () => {
    const response = await fetch(`${harness.url}${VIDEOS}/${randomUUID()}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${harness.keys.alpha}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect({ status: response.status, body: await response.json() }).toEqual({
      status: 400,
      body: errorBody(400, 'body_not_allowed', 'DELETE requests must not carry a body'),
    });
    expect(harness.simulator.received).toEqual([]);
  });

  test('GET with Content-Length: 0 is fine', async () => {
    const response = await sendRaw(harness.url, 'GET', '/v1/account/usage', {
      authorization: `Bearer ${harness.keys.alpha}`,
      'content-length': '0',
    });
    expect(response.status).toBe(200);
  });
});
