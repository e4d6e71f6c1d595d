// The simulator's HTTP surface outside the happy path: authentication, unknown paths, wrong methods,
// and bodies that are not JSON objects, all answered in the service's envelope.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import { call, startTestSimulator } from './simulator-client.ts';

let simulator: SimulatorServer;
beforeAll(async () => {
  simulator = await startTestSimulator();
});
afterAll(async () => {
  await simulator.close();
});

describe('authentication', () => {
  test.each([
    ['no Authorization header', null, 'missing_api_key', 'an Authorization: Bearer token is required'],
    ['an unknown token', 'Bearer sim_unknown', 'invalid_api_key', 'the API key is not valid'],
    ['another scheme', 'Basic c2ltOnNpbQ==', 'invalid_api_key', 'the API key is not valid'],
  ])('%s: 401 with WWW-Authenticate', async (_name, auth, code, message) => {
    const answer = await call(simulator, 'GET', '/v1/account/keys', { auth });
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toBe('Bearer');
    expect(answer.body).toEqual({ status: 401, error: { code, type: 'authentication_error', message } });
  });
});

describe('routes', () => {
  test('an unknown path: 404 envelope', async () => {
    const answer = await call(simulator, 'GET', '/v1/images');
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({
      status: 404,
      error: { code: 'route_not_found', type: 'not_found_error', message: 'no route GET /v1/images' },
    });
  });

  test.each([
    ['GET', '/v1/images/generations', 'POST'],
    ['DELETE', '/v1/images/generations/3f2504e0-4f89-41d3-9a0c-0305e82c3301', 'GET'],
    ['PATCH', '/v1/videos/generations/3f2504e0-4f89-41d3-9a0c-0305e82c3301', 'GET, DELETE'],
    ['POST', '/v1/account/usage', 'GET'],
    ['PUT', '/v1/keys', 'GET'],
  ])('%s %s: 405 with Allow %s', async (method, path, allow) => {
    const answer = await call(simulator, method, path);
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe(allow);
    expect(answer.body).toEqual({
      status: 405,
      error: {
        code: 'method_not_allowed',
        type: 'not_found_error',
        message: `${method} is not allowed here; use ${allow}`,
      },
    });
  });
});

describe('bodies', () => {
  test.each([
    ['broken JSON', '{"samples":', 'the request body is not valid JSON'],
    ['an empty body', '', 'the request body is not valid JSON'],
    ['an array', '[1]', 'body must be a JSON object'],
    ['a string', '"x"', 'body must be a JSON object'],
    ['null', 'null', 'body must be a JSON object'],
  ])('%s: 400 invalid_json', async (_name, body, message) => {
    const answer = await call(simulator, 'POST', '/v1/images/generations', { body });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      status: 400,
      error: { code: 'invalid_json', type: 'validation_error', message },
    });
  });

  test('duplicate members: the last one wins', async () => {
    const answer = await call(simulator, 'POST', '/v1/images/generations', {
      body: '{"samples":99,"samples":2}',
    });
    expect(answer.status).toBe(200);
  });

  test('a body that is not JSON: 415', async () => {
    const answer = await call(simulator, 'POST', '/v1/images/generations', {
      body: '{}',
      headers: { 'content-type': 'text/plain' },
    });
    expect(answer.status).toBe(415);
    expect(answer.body).toEqual({
      status: 415,
      error: {
        code: 'unsupported_media_type',
        type: 'validation_error',
        message: 'request bodies must be application/json',
      },
    });
  });
});
