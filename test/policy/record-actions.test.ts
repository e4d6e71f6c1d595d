import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.ts';
import { recordPolicyActions } from '../../src/policy/record-actions.ts';

async function policyActionCounts(metrics: ReturnType<typeof createMetrics>) {
  const { values } = await metrics.policyActions.get();
  return values.map(({ labels, value }) => ({ labels, value }));
}

describe('recordPolicyActions', () => {
  it('counts each change by tenant, rule and action', async () => {
    const metrics = createMetrics(new Registry());
    const changes = [
      { rule: 'safetyLevel', field: 'safetyLevel', action: 'raised', from: 'low', to: 'high' },
      { rule: 'samples', field: 'samples', action: 'clamped', from: 8, to: 4 },
    ] as const;
    recordPolicyActions(metrics, 'team-a', { body: {}, changes: [...changes], shadowed: [] });
    recordPolicyActions(metrics, 'team-a', { body: {}, changes: [changes[1]], shadowed: [] });
    expect(await policyActionCounts(metrics)).toEqual([
      { labels: { tenant: 'team-a', rule: 'safetyLevel', action: 'raised' }, value: 1 },
      { labels: { tenant: 'team-a', rule: 'samples', action: 'clamped' }, value: 2 },
    ]);
  });

  it('counts a rejection as rejected, and every shadowed decision as shadowed', async () => {
    const metrics = createMetrics(new Registry());
    const rejection = { rule: 'video', action: 'rejected', param: undefined, message: 'no' } as const;
    recordPolicyActions(metrics, 'team-a', { body: {}, changes: [], rejection, shadowed: [] });
    recordPolicyActions(metrics, 'team-b', {
      body: {},
      changes: [],
      shadowed: [rejection, { rule: 'steps', field: 'steps', action: 'clamped', from: 40, to: 30 }],
    });
    expect(await policyActionCounts(metrics)).toEqual([
      { labels: { tenant: 'team-a', rule: 'video', action: 'rejected' }, value: 1 },
      { labels: { tenant: 'team-b', rule: 'video', action: 'shadowed' }, value: 1 },
      { labels: { tenant: 'team-b', rule: 'steps', action: 'shadowed' }, value: 1 },
    ]);
  });
});
