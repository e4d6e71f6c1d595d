// Applies a tenant's policy to one validated request body (docs/policy.md). Pure: no I/O, no clock.
import type { TenantPolicy } from '../config/schema.ts';
import { NumberTexts } from '../json/number-texts.ts';
import {
  isRejection,
  type PolicyChange,
  type PolicyDecision,
  type PolicyOutcome,
  type PolicyRoute,
} from './outcome.ts';
import { RULES_IN_ORDER } from './rules.ts';

// A new object with the same members in the same order; the forwarded bytes are spliced from it
// (src/validation/json-body.ts), so every other value is forwarded exactly as the client wrote it.
function rewrite(body: Record<string, unknown>, changes: readonly PolicyChange[]): Record<string, unknown> {
  const rewritten = { ...body };
  for (const { field, to } of changes) rewritten[field] = to;
  return rewritten;
}

/**
 * Every rule is evaluated, so shadow mode can report all the rules a request breaks. Enforce mode refuses
 * the request at the first rejecting rule (in rule order) and then changes nothing; otherwise it applies
 * every raise, clamp and set. Numbers are judged on the texts in `numbers` (exactly as validation judged
 * them); a number without one is judged on its value.
 */
export function applyPolicy(
  policy: TenantPolicy,
  route: PolicyRoute,
  body: Record<string, unknown>,
  numbers: NumberTexts = NumberTexts.none,
): PolicyOutcome {
  const decisions: PolicyDecision[] = [];
  for (const evaluate of RULES_IN_ORDER) {
    const decision = evaluate(policy, route, body, numbers);
    if (decision !== undefined) decisions.push(decision);
  }
  if (policy.mode === 'shadow') return { body, changes: [], shadowed: decisions };
  const rejection = decisions.find(isRejection);
  if (rejection !== undefined) return { body, changes: [], rejection, shadowed: [] };
  const changes = decisions.filter((decision) => !isRejection(decision));
  return { body: changes.length === 0 ? body : rewrite(body, changes), changes, shadowed: [] };
}
