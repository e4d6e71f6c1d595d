// What an error echoes of the request is bounded and inert (docs/security.md#in-what-is-echoed): a name the client invented is cut
// short and named once per answer, never counted under a schema field's metric label whatever it is
// called, and the admin port's errors echo nothing.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildAdminApp } from '../../src/admin/app.ts';
import { createReadiness } from '../../src/admin/readiness.ts';
import { MAX_ECHOED_NAME_LENGTH } from '../../src/json/echoed-name.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { useGatewayHarness } from '../support/gateway-harness.ts';
import { sendRaw } from '../support/raw-http.ts';
import { UNKNOWN_MEMBER } from '../validation/validation-client.ts';

const IMAGES = '/v1/images/generations';
const SCRIPT = '<script>alert(document.cookie)</script>';
const LONG_NAME = `${SCRIPT}${'x'.repeat(10_000)}`;
const CUT_NAME = `${LONG_NAME.slice(0, MAX_ECHOED_NAME_LENGTH)}…`;

const harness = useGatewayHarness();

async function post(body: string) {
  const response = await fetch(`${harness.url}${IMAGES}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${harness.keys.alpha}`, 'content-type': 'application/json' },
    body,
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

function occurrences(text: string, part: string): number {
  return text.split(part).length - 1;
}

describe('names the client invented: cut short, named once', () => {
  test('an unknown member with a long HTML name', async () => {
    const answer = await post(JSON.stringify({ [LONG_NAME]: 1, samples: 0 }));
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toEqual({
      status: 400,
      error: {
        code: 'unknown_parameter',
        type: 'validation_error',
        message: UNKNOWN_MEMBER,
        param: CUT_NAME,
        details: [{ param: 'samples', message: 'must be at least 1' }],
      },
    });
    expect(occurrences(answer.text, SCRIPT)).toBe(1);
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
  });

  test('a duplicate member deep in a long path', async () => {
    const answer = await post(`{"input":{${JSON.stringify(LONG_NAME)}:1,${JSON.stringify(LONG_NAME)}:2}}`);
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toEqual({
      status: 400,
      error: {
        code: 'invalid_json',
        type: 'validation_error',
        message: 'the member at param appears more than once; member names must be unique',
        param: `input.${LONG_NAME.slice(0, MAX_ECHOED_NAME_LENGTH - 'input.'.length)}…`,
      },
    });
    expect(occurrences(answer.text, SCRIPT)).toBe(1);
  });

  test('a surrogate pair at the cut is not split', async () => {
    const name = `${'a'.repeat(MAX_ECHOED_NAME_LENGTH - 1)}😀tail`;
    const answer = await post(JSON.stringify({ [name]: 1 }));
    const { param } = (JSON.parse(answer.text) as { error: { param: string } }).error;
    expect(param).toBe(`${'a'.repeat(MAX_ECHOED_NAME_LENGTH - 1)}…`);
  });
});

describe('validation failure labels come from the schema alone', () => {
  async function failures(param: string): Promise<number | undefined> {
    const metric = await harness.metrics.registry.getSingleMetric('gengate_validation_failures_total')?.get();
    return metric?.values.find(({ labels }) => labels.route === 'images.create' && labels.param === param)
      ?.value;
  }

  test('a top-level member named "dimensions.width" is unknown, not that field', async () => {
    const [field, unknown] = [await failures('dimensions.width'), await failures('(unknown)')];
    const answer = await post('{"dimensions.width":99999}');
    expect(answer.status).toBe(400);
    expect(await failures('dimensions.width')).toBe(field);
    expect(await failures('(unknown)')).toBe((unknown ?? 0) + 1);
  });
});

describe("the admin port's errors echo nothing", () => {
  let admin: FastifyInstance;
  let url: string;
  beforeAll(async () => {
    admin = buildAdminApp({
      logger: pino({ level: 'silent' }),
      metrics: createMetrics(),
      readiness: createReadiness(),
    });
    url = await admin.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await admin.close();
  });

  test.each([
    ['an unknown path', 'GET', `/${SCRIPT}`, {}, '', 404, 'not found'],
    ['another method', 'DELETE', '/metrics?<b>x</b>', {}, '', 404, 'not found'],
    [
      'a body of a media type it does not read',
      'POST',
      '/metrics',
      { 'content-type': `text/${SCRIPT}`, 'content-length': '2' },
      'hi',
      415,
      'unsupported media type',
    ],
  ])('%s: %s %s', async (_name, method, target, headers, body, status, word) => {
    const answer = await sendRaw(url, method, target, headers, body);
    expect(answer.status).toBe(status);
    expect(JSON.parse(answer.body)).toEqual({ status: word });
    expect(answer.body).not.toContain('script');
    expect(answer.body).not.toContain(method);
  });
});
