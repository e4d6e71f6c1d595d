// Rate-limit response headers (docs/rate-limits.md, "Headers"), computed only from the decision, i.e. from
// the store's clock. Retry-After accompanies every refusal that has a wait; the informative headers are sent
// only for exact decisions, never for what a per-replica fallback guessed.
import type { LimitState, RateDecision } from './types.ts';

// RFC 8941 strings: the limit ids come from configuration ([a-z0-9-]), escape anyway so a header can
// never break.
const NEEDS_ESCAPE = /["\\]/;

function sfString(value: string): string {
  if (!NEEDS_ESCAPE.test(value)) return `"${value}"`;
  return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

function policyItem(state: LimitState): string {
  return `${sfString(state.id)};q=${state.limit};w=${state.windowSeconds}`;
}

function limitItem(state: LimitState): string {
  return `${sfString(state.id)};r=${state.remaining};t=${state.secondsUntilFull}`;
}

export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  const headers: Record<string, string> = {};
  const binding = decision.binding;
  if (decision.exact && binding !== undefined) {
    headers['X-RateLimit-Limit'] = String(binding.limit);
    headers['X-RateLimit-Remaining'] = String(binding.remaining);
    headers['X-RateLimit-Reset'] = String(binding.resetEpochSeconds);
    headers['RateLimit-Policy'] = decision.limits.map(policyItem).join(', ');
    headers['RateLimit'] = decision.limits.map(limitItem).join(', ');
  }
  if (decision.retryAfterSeconds !== undefined) headers['Retry-After'] = String(decision.retryAfterSeconds);
  return headers;
}
