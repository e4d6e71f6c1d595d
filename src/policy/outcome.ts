// What the policy engine decided about one request: the body to forward, the changes made to it, the
// rejection that stops it, and, in shadow mode, what enforce mode would have done instead.

export type PolicyRoute = 'images.create' | 'videos.create';

/** The rules, in the order docs/policy.md applies them. */
export const POLICY_RULES = [
  'models',
  'video',
  'safetyLevel',
  'samples',
  'steps',
  'scanResults',
  'outputTypes',
] as const;
export type PolicyRule = (typeof POLICY_RULES)[number];

/** A value as the request sent it or as the policy forwards it: enum words, integers, booleans. */
export type PolicyValue = string | number | boolean;

export interface PolicyChange {
  rule: PolicyRule;
  /** The top-level body member rewritten. */
  field: string;
  action: 'raised' | 'clamped' | 'set';
  /** What the request sent; undefined when it sent nothing (or null) and the service default applied. */
  from: PolicyValue | undefined;
  to: PolicyValue;
}

export interface PolicyRejection {
  rule: PolicyRule;
  action: 'rejected';
  /** The field at fault; undefined when the request as a whole is refused (video disabled). */
  param: string | undefined;
  /** Names the field and the tenant's bound, e.g. "samples must be at most 4 for this tenant". */
  message: string;
}

/** One rule's verdict on a request. */
export type PolicyDecision = PolicyChange | PolicyRejection;

export interface PolicyOutcome {
  /** The body to forward: the very object received when nothing changed, so its bytes can be reused. */
  body: Record<string, unknown>;
  /** The rewrites applied (enforce mode, request not rejected). */
  changes: PolicyChange[];
  /** Set when enforce mode refuses the request: the first rejecting rule in rule order. */
  rejection?: PolicyRejection;
  /** Shadow mode only: every decision enforce mode would have made, in rule order. */
  shadowed: PolicyDecision[];
}

export function isRejection(decision: PolicyDecision): decision is PolicyRejection {
  return decision.action === 'rejected';
}

/** What enforce mode does with these decisions (./apply-policy.ts): reject at the first, or apply all. */
export function enforcedDecisions(decisions: readonly PolicyDecision[]): readonly PolicyDecision[] {
  const rejection = decisions.find(isRejection);
  return rejection === undefined ? decisions : [rejection];
}
