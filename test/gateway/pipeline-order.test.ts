// The order of the request's path is documented once, in src/gateway/pipeline.ts: this pins what Fastify
// actually runs, hook by hook, so that a step registered out of place (a plugin loading after the hooks
// it must precede, say) fails here rather than in some refusal's order.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.ts';

let harness: GatewayHarness;
beforeAll(async () => {
  // Load shedding on, so that its check takes its place among the hooks.
  harness = await startGatewayHarness({
    overloadYaml: '{ maxEventLoopDelayMs: 1000, maxHeapUsedRatio: 0.99 }',
  });
});
afterAll(async () => {
  await harness.close();
});

/** Each stage's hooks, by function name, of the route whose line in printRoutes() starts with `route`. */
function hooksOf(route: string): Record<string, string[]> {
  const lines = harness.app.printRoutes({ includeHooks: true, commonPrefix: false }).split('\n');
  const start = lines.findIndex((line) => line.includes(`── ${route}`));
  const hooks: Record<string, string[]> = {};
  for (const line of lines.slice(start + 1)) {
    const stage = /• \((\w+)\) (\[.*\])$/.exec(line);
    if (stage === null) break;
    hooks[stage[1]!] = (JSON.parse(stage[2]!) as string[]).map((name) => name.replace(/\(\)$/, ''));
  }
  return hooks;
}

const APP_WIDE_ON_REQUEST = ['createRequestState', 'shedWhenOverloaded', 'enterInflight', 'admitRequestHead'];

test('a create meets every step in the documented order', () => {
  expect(hooksOf('/v1/images/generations (POST)')).toEqual({
    onRequest: [...APP_WIDE_ON_REQUEST, 'admitRequestTarget', 'authenticate'],
    preParsing: ['holdRequestBody', 'continueWhenAllowed'],
    preValidation: ['validateRequestBody'],
    preHandler: ['enforcePolicy', 'admit'],
    onSend: [
      'closeConnectionAfterResponse',
      'addRequestIdHeader',
      'markAnswerPrivate',
      'settleClaim',
      'followCreate',
    ],
    onResponse: ['observeRequest', 'countServedRequest'],
    onError: ['countValidationFailures', 'showLimitsOnRefusal'],
  });
});

test('a read skips the body steps', () => {
  expect(hooksOf('/v1/account/usage (GET)')).toEqual({
    onRequest: [...APP_WIDE_ON_REQUEST, 'admitRequestTarget', 'authenticate'],
    preHandler: ['admit'],
    onSend: ['closeConnectionAfterResponse', 'addRequestIdHeader', 'markAnswerPrivate'],
    onResponse: ['observeRequest', 'countServedRequest'],
    onError: ['countValidationFailures', 'showLimitsOnRefusal'],
  });
});
