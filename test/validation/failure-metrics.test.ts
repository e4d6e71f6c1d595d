// gengate_validation_failures_total{route,param}: one count per problem field of each refused body,
// with param drawn only from the schema's field paths, so clients cannot mint new series.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.ts';
import { routeSchemaFor } from '../../src/validation/request-schemas.ts';
import { IMAGES, VIDEOS, postJson } from './validation-client.ts';

let harness: GatewayHarness;
beforeAll(async () => {
  harness = await startGatewayHarness({ bodyLimitBytes: 1024 });
});
afterAll(async () => {
  await harness.close();
});

/** Counts by "route param"; every series when `nonZero` is false. */
async function failureCounts({ nonZero = true } = {}): Promise<Record<string, number>> {
  const metric = await harness.metrics.validationFailures.get();
  return Object.fromEntries(
    metric.values
      .filter(({ value }) => !nonZero || value > 0)
      .map(({ labels, value }) => [`${String(labels.route)} ${String(labels.param)}`, value]),
  );
}

describe('gengate_validation_failures_total', () => {
  test('starts at 0 for every field path of each create route, (unknown) and (body)', async () => {
    const expected = (['images.create', 'videos.create'] as const).flatMap((route) =>
      [...(routeSchemaFor(route)?.fieldPaths ?? []), '(unknown)', '(body)'].map(
        (param) => `${route} ${param}`,
      ),
    );
    expect(Object.keys(await failureCounts({ nonZero: false })).sort()).toEqual(expected.sort());
    expect(await failureCounts()).toEqual({});
  });

  test('counts each refused field once per request, and nothing for other outcomes', async () => {
    const sent: [path: string, body: string, headers?: Record<string, string>][] = [
      [IMAGES, '{"samples":0,"steps":51,"color":"red","flavour":1}'],
      [IMAGES, '{"samples":21}'],
      [IMAGES, '{"dimensions":{"outpaint":{"top":"1"}}}'],
      [IMAGES, '{"samples":1,"samples":2}'],
      [IMAGES, '{"__proto__":{}}'],
      [IMAGES, '{"samples":'],
      [IMAGES, '[]'],
      [VIDEOS, '{}'],
      [VIDEOS, '{"duration":5,"dimensions":{"width":1,"height":1}}'],
      // Not body validation: accepted, wrong media type, too large, unauthenticated.
      [IMAGES, '{"samples":2}'],
      [IMAGES, '{}', { 'content-type': 'text/plain' }],
      [IMAGES, `{"scheduler":"${'x'.repeat(2000)}"}`],
    ];
    for (const [path, body, headers] of sent) await postJson(harness, path, body, headers);
    await fetch(`${harness.url}${IMAGES}`, { method: 'POST', body: '{"samples":99}' });

    expect(await failureCounts()).toEqual({
      'images.create samples': 3,
      'images.create steps': 1,
      'images.create (unknown)': 2,
      'images.create dimensions.outpaint.top': 1,
      'images.create (body)': 2,
      'videos.create duration': 1,
      'videos.create dimensions': 1,
    });
  });

  test('whatever members a client invents, param stays within the schema and two fixed values', async () => {
    const invented = Array.from({ length: 50 }, (_, index) => `"field${index}":1`).join(',');
    await postJson(harness, IMAGES, `{${invented}}`);
    await postJson(harness, IMAGES, `{"input":{"a":1,"a":2}}`);
    const params = new Set(Object.keys(await failureCounts()).map((key) => key.split(' ')[1]));
    expect([...params].sort()).toEqual(
      ['(body)', '(unknown)', 'dimensions', 'dimensions.outpaint.top', 'duration', 'samples', 'steps'].sort(),
    );
  });
});
