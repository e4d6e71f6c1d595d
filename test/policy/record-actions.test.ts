import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/observability/metrics.ts';
import { recordPolicyActions, startPolicyActionsAtZero } from '../../src/policy/record-actions.ts';
import { loadPolicy } from './policy-fixtures.ts';

async function policyActionCounts(metrics: ReturnType<typeof createMetrics>) {
  const { values } = await metrics.policyActions.get();
  return values.map(({ labels, value }) => ({ labels, value }));
}

const samplesClamped = { rule: 'samples', field: 'samples', action: 'clamped', from: 8, to: 4 } as const;
const videoRejected = { rule: 'video', action: 'rejected', param: undefined, message: 'no' } as const;

describe('recordPolicyActions', () => {
  it('counts each change by tenant, rule, action and mode', async () => {
    const metrics = createMetrics(new Registry());
    const raised = {
      rule: 'safetyLevel',
      field: 'safetyLevel',
      action: 'raised',
      from: 'low',
      to: 'high',
    } as const;
    recordPolicyActions(metrics, 'team-a', 'enforce', {
      body: {},
      changes: [raised, samplesClamped],
      shadowed: [],
    });
    recordPolicyActions(metrics, 'team-a', 'enforce', { body: {}, changes: [samplesClamped], shadowed: [] });
    expect(await policyActionCounts(metrics)).toEqual([
      { labels: { tenant: 'team-a', rule: 'safetyLevel', action: 'raised', mode: 'enforce' }, value: 1 },
      { labels: { tenant: 'team-a', rule: 'samples', action: 'clamped', mode: 'enforce' }, value: 2 },
    ]);
  });

  it('counts a rejection as rejected; in shadow mode, what enforce would have done', async () => {
    const metrics = createMetrics(new Registry());
    recordPolicyActions(metrics, 'team-a', 'enforce', {
      body: {},
      changes: [],
      rejection: videoRejected,
      shadowed: [],
    });
    // Enforce mode stops at the rejection: the clamp that shadow mode also saw is not counted.
    recordPolicyActions(metrics, 'team-b', 'shadow', {
      body: {},
      changes: [],
      shadowed: [videoRejected, samplesClamped],
    });
    recordPolicyActions(metrics, 'team-b', 'shadow', { body: {}, changes: [], shadowed: [samplesClamped] });
    expect(await policyActionCounts(metrics)).toEqual([
      { labels: { tenant: 'team-a', rule: 'video', action: 'rejected', mode: 'enforce' }, value: 1 },
      { labels: { tenant: 'team-b', rule: 'video', action: 'rejected', mode: 'shadow' }, value: 1 },
      { labels: { tenant: 'team-b', rule: 'samples', action: 'clamped', mode: 'shadow' }, value: 1 },
    ]);
  });
});

describe('startPolicyActionsAtZero', () => {
  it('creates a 0 for each action the configured rules can take, in the tenant mode', async () => {
    const metrics = createMetrics(new Registry());
    const policy = await loadPolicy(
      '{ mode: shadow, models: { deny: ["x@*"] }, video: { enabled: true }, safetyLevel: { minimum: high }, samples: { maximum: 4, onViolation: reject }, steps: { maximum: 20 }, scanResults: { require: true }, outputTypes: [url] }',
    );
    startPolicyActionsAtZero(metrics, { id: 'team-a', policy });
    const zero = (rule: string, action: string) => ({
      labels: { tenant: 'team-a', rule, action, mode: 'shadow' },
      value: 0,
    });
    // video is enabled without a maximum duration: it can reject nothing.
    expect(await policyActionCounts(metrics)).toEqual([
      zero('models', 'rejected'),
      zero('safetyLevel', 'raised'),
      zero('safetyLevel', 'set'),
      zero('samples', 'rejected'),
      zero('steps', 'clamped'),
      zero('scanResults', 'set'),
      zero('outputTypes', 'rejected'),
    ]);
  });

  it('creates nothing for a tenant without rules', async () => {
    const metrics = createMetrics(new Registry());
    startPolicyActionsAtZero(metrics, { id: 'team-a', policy: await loadPolicy('{}') });
    expect(await policyActionCounts(metrics)).toEqual([]);
  });
});
