// Bounded by construction (docs/reliability.md, "Overload"): the bytes a replica holds for requests and
// answers in flight are bounded as a whole by server.maxBytesInFlight. A request body that does not fit
// is refused before it is read, an upstream answer that does not fit is cut; either request gets 503
// overloaded with Retry-After and is counted; what fits is served as before. (test/faults/memory.test.ts
// shows the memory this saves, against the real process.)
import { beforeEach, describe, expect, test } from 'vitest';
import { useGatewayHarness } from '../support/gateway-harness.ts';
import { startMisbehavingUpstream, type MisbehavingUpstream } from '../support/misbehaving-upstream.ts';

const MIB = 1024 * 1024;
const IMAGES = '/v1/images/generations';
const OVERLOADED = {
  status: 503,
  error: {
    code: 'overloaded',
    type: 'unavailable_error',
    message: 'this gateway replica holds as many requests and answers in memory as it may; retry shortly',
  },
};

let upstream: MisbehavingUpstream | undefined;
const harness = useGatewayHarness({
  maxBytesInFlight: MIB,
  inFrontOfUpstream: async (simulatorUrl) => (upstream = await startMisbehavingUpstream(simulatorUrl)),
});
beforeEach(() => {
  upstream?.twist(undefined);
});

function create(prompt: string) {
  return fetch(`${harness.url}${IMAGES}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${harness.keys.alpha}`, 'content-type': 'application/json' },
    body: JSON.stringify({ input: { positivePrompt: prompt } }),
  });
}

async function shedCount(): Promise<number> {
  const line = (await harness.metrics.registry.getSingleMetricAsString('gengate_load_shed_total'))
    .split('\n')
    .find((each) => each.startsWith('gengate_load_shed_total{reason="bytes_in_flight"}'));
  return Number(line?.split(' ')[1]);
}

describe('server.maxBytesInFlight', () => {
  test('a request body larger than the bound is refused unread: 503 overloaded, nothing forwarded', async () => {
    const before = await shedCount();
    const refused = await create('p'.repeat(2 * MIB));
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.headers.get('connection')).toBe('close');
    expect(await refused.json()).toEqual(OVERLOADED);
    expect(harness.simulator.received).toEqual([]);
    expect(await shedCount()).toBe(before + 1);
    // What fits is served, the count of the refused body never taken.
    const served = await create('a lighthouse');
    expect(served.status).toBe(200);
  });

  test('an upstream answer larger than the bound is cut: 503 overloaded; a small one passes', async () => {
    const created = await create('a lighthouse');
    const { requestId } = ((await created.json()) as { data: { requestId: string } }).data;
    const padding = 'p'.repeat(2 * MIB);
    upstream?.twist(
      (answer) => ({ ...answer, body: `${answer.body.slice(0, -1)},"padding":"${padding}"}` }),
      {
        method: 'GET',
      },
    );
    const before = await shedCount();
    const poll = () =>
      fetch(`${harness.url}${IMAGES}/${requestId}`, {
        headers: { authorization: `Bearer ${harness.keys.alpha}` },
      });
    const cut = await poll();
    expect(cut.status).toBe(503);
    expect(cut.headers.get('retry-after')).toBe('1');
    expect(await cut.json()).toEqual(OVERLOADED);
    expect(await shedCount()).toBe(before + 1);
    upstream?.twist(undefined);
    const passed = await poll();
    expect(passed.status).toBe(200);
    expect(((await passed.json()) as { data: { id: string } }).data.id).toBe(requestId);
    // Everything counted was released: nothing is held once the exchanges are over.
    const held = await harness.metrics.registry.getSingleMetricAsString('gengate_bytes_in_flight');
    expect(held).toMatch(/^gengate_bytes_in_flight 0$/m);
    const limit = await harness.metrics.registry.getSingleMetricAsString('gengate_bytes_in_flight_limit');
    expect(limit).toMatch(new RegExp(`^gengate_bytes_in_flight_limit ${MIB}$`, 'm'));
  });
});
