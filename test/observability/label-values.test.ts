// docs/operations.md#metrics: label values come only from configuration, the route table and fixed sets, never
// from request data. Hostile requests (odd paths, methods, ids, headers, bodies, label-injection strings)
// go through a real gateway; then every label of every gengate_* series on GET /metrics must be a value
// this file derives from those sources, and no canary the requests carried may appear anywhere.
import { randomUUID } from 'node:crypto';
import { expect, test } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };
import { ROUTE_IDS } from '../../src/config/route-ids.ts';
import {
  CONFIG_RELOAD_RESULTS,
  UPSTREAM_ERROR_REASONS,
  LOAD_SHED_REASONS,
} from '../../src/observability/metrics.ts';
import { POLICY_RULES } from '../../src/policy/outcome.ts';
import { JOB_OUTCOMES } from '../../src/jobs/metrics.ts';
import { POLL_RESULTS } from '../../src/jobs/tracker.ts';
import { EXACT_DECISIONS } from '../../src/ratelimit/metrics.ts';
import { STORE_OPERATIONS } from '../../src/store/metrics.ts';
import { routeSchemaFor } from '../../src/validation/request-schemas.ts';
import { useGatewayHarness, useMetricsScraper } from '../support/gateway-harness.ts';
import { sendRaw } from '../support/raw-http.ts';

const IMAGES = '/v1/images/generations';
const VIDEOS = '/v1/videos/generations';
// In every hostile value, so that any of them surfacing in the exposition is found by one search.
const CANARY = 'zq7canary';
const INJECTIONS = [
  `${CANARY}"} 1\ngengate_evil{x="`,
  `${CANARY}\\"},tenant="alpha`,
  `${CANARY}\u2028ünïcødé\u{1F600}`,
  `${CANARY}${'x'.repeat(4000)}`,
];
const LIMITS = '[{ id: per-minute, routes: ["*"], cost: requests, limit: 1000, windowSeconds: 60 }]';
const POLICY = '{ samples: { maximum: 2, onViolation: clamp }, outputTypes: [url] }';

const harness = useGatewayHarness({ alphaLimitsYaml: LIMITS, alphaPolicyYaml: POLICY });
const admin = useMetricsScraper(harness);

/** The label values allowed for each label name: from the harness' configuration and fixed sets only. */
const ALLOWED: Record<string, (value: string) => boolean> = {
  route: oneOf([...ROUTE_IDS, 'unmatched']),
  method: oneOf(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'other']),
  // The gateway's own answer (or the upstream's, for the upstream histogram), never a client's word.
  status: (value) => /^[1-5][0-9]{2}$/.test(value) || value === 'error',
  tenant: oneOf(['alpha', 'beta', 'gamma', 'none']),
  credential: oneOf(['shared', 'research']),
  limit: oneOf(['per-minute']),
  decision: oneOf(EXACT_DECISIONS),
  operation: oneOf(STORE_OPERATIONS),
  rule: oneOf(POLICY_RULES),
  action: oneOf(['raised', 'clamped', 'set', 'rejected']),
  mode: oneOf(['enforce', 'shadow']),
  param: oneOf([
    ...(routeSchemaFor('images.create')?.fieldPaths ?? []),
    ...(routeSchemaFor('videos.create')?.fieldPaths ?? []),
    '(unknown)',
    '(body)',
  ]),
  // Config reloads' results, and the job tracker's polls'.
  result: oneOf([...CONFIG_RELOAD_RESULTS, ...POLL_RESULTS]),
  outcome: oneOf(JOB_OUTCOMES),
  scope: oneOf(['daily', 'monthly']),
  reason: oneOf([...UPSTREAM_ERROR_REASONS, ...LOAD_SHED_REASONS]),
  le: (value) => value === '+Inf' || Number.isFinite(Number(value)),
  version: oneOf([packageJson.version]),
  node_version: oneOf([process.versions.node]),
  server: oneOf(['gateway', 'admin']),
};

function oneOf(values: Iterable<string>): (value: string) => boolean {
  const allowed = new Set(values);
  return (value) => allowed.has(value);
}

interface Sample {
  name: string;
  labels: [name: string, value: string][];
}

// A sample line of the text format: name, optional {labels}, value. Label values are quoted, with \\, \"
// and \n escaped; anything else makes the line fail to parse, which fails the test.
const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL_PAIR = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)",?/gy;

function unescapeLabelValue(escaped: string): string {
  return escaped.replace(/\\(.)/g, (_escape, character: string) => (character === 'n' ? '\n' : character));
}

function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE_LINE.exec(line);
    if (match === null) throw new Error(`not a sample line: ${line}`);
    const [, name = '', labelText = ''] = match;
    const labels: Sample['labels'] = [];
    let parsed = 0;
    LABEL_PAIR.lastIndex = 0;
    for (let pair = LABEL_PAIR.exec(labelText); pair !== null; pair = LABEL_PAIR.exec(labelText)) {
      labels.push([pair[1] ?? '', unescapeLabelValue(pair[2] ?? '')]);
      parsed = LABEL_PAIR.lastIndex;
    }
    if (parsed !== labelText.length) throw new Error(`labels that do not parse: ${line}`);
    samples.push({ name, labels });
  }
  return samples;
}

async function sendHostileTraffic(): Promise<void> {
  const keys = harness.keys;
  const uuid = randomUUID();
  for (const injection of INJECTIONS) {
    const encoded = encodeURIComponent(injection.slice(0, 200));
    // fetch sends no line break and nothing beyond Latin-1 in a header; sendRaw below sends UTF-8 bytes.
    const headerValue = injection.replace(/[\n\u2028]/g, ' ').replace(/[^\u0020-\u00ff]/gu, '?');
    const headers = {
      'x-request-id': headerValue,
      'x-tenant': headerValue,
      'x-gengate-tenant': 'alpha',
      'user-agent': headerValue,
    };
    const bodies = [
      `{"requestId":${JSON.stringify(injection)},"input":{"positivePrompt":${JSON.stringify(injection)}}}`,
      `{${JSON.stringify(injection)}:1,"samples":9}`,
      `{"samples":${JSON.stringify(injection)},"outputType":${JSON.stringify(injection)}}`,
      `{"model":${JSON.stringify(injection)},"input":{${JSON.stringify(injection)}:1}}`,
      injection,
    ];
    for (const body of bodies) {
      for (const path of [IMAGES, VIDEOS]) {
        for (const key of [keys.alpha, keys.beta, headerValue, `ggk_${'A'.repeat(40)}`]) {
          await fetch(`${harness.url}${path}`, {
            method: 'POST',
            headers: { ...headers, authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body,
          });
        }
      }
    }
    for (const target of [
      IMAGES,
      `/${encoded}`,
      `${IMAGES}/${encoded}`,
      `${IMAGES}/${uuid}/${encoded}`,
      `${VIDEOS}/${uuid}?${encoded}`,
      `/v1/account/usage/..%2F${encoded}`,
    ]) {
      for (const method of ['GET', 'DELETE', 'PATCH', 'OPTIONS', 'PUT']) {
        await fetch(`${harness.url}${target}`, {
          method,
          headers: { ...headers, authorization: `Bearer ${keys.gamma}` },
        });
      }
    }
  }
  // Methods and targets fetch would not send: a known method the table never names, and raw bytes.
  for (const [method, target] of [
    ['PROPFIND', IMAGES],
    ['TRACE', `${IMAGES}/${uuid}`],
    ['GET', `/${CANARY}%22%7D%0A`],
    ['GET', `${IMAGES}/../${CANARY}`],
    ['GET', `//${CANARY}`],
    ['GET', `*`],
  ] as const) {
    await sendRaw(harness.url, method, target, {
      authorization: `Bearer ${keys.alpha}`,
      'x-request-id': `${CANARY}"}ünïcødé`,
      'x-tenant': `${CANARY}\u{1F600}`,
    });
  }
  // And a real job, so the request, usage and policy series carry counts too.
  const created = await fetch(`${harness.url}${IMAGES}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${keys.alpha}`, 'content-type': 'application/json' },
    body: `{"samples":4,"input":{"positivePrompt":${JSON.stringify(INJECTIONS[0])}}}`,
  });
  expect(created.status).toBe(200);
  const { data } = (await created.json()) as { data: { requestId: string } };
  expect(
    (
      await fetch(`${harness.url}${IMAGES}/${data.requestId}`, {
        headers: { authorization: `Bearer ${keys.alpha}` },
      })
    ).status,
  ).toBe(200);
}

test('after hostile requests, every gengate_* label value comes from configuration, routes or a fixed set', async () => {
  await sendHostileTraffic();
  const response = await admin.scrape();
  expect(response.statusCode).toBe(200);
  expect(response.body).not.toContain(CANARY);
  const samples = parseExposition(response.body).filter((sample) => sample.name.startsWith('gengate_'));
  const refused = samples.flatMap(({ name, labels }) =>
    labels
      .filter(([label, value]) => ALLOWED[label]?.(value) !== true)
      .map(([label, value]) => `${name} ${label}=${JSON.stringify(value.slice(0, 80))}`),
  );
  expect(refused).toEqual([]);
  // The traffic reached what it was meant to: unmatched routes, refusals of every kind, forwarded work.
  const seen = (label: string) =>
    new Set(
      samples.flatMap(({ labels }) => labels.filter(([name]) => name === label).map(([, value]) => value)),
    );
  expect(seen('route')).toContain('unmatched');
  expect(seen('tenant')).toEqual(new Set(['alpha', 'beta', 'gamma', 'none']));
  expect([...seen('status')]).toEqual(expect.arrayContaining(['200', '400', '401', '404', '405']));
});
