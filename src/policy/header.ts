// The `Gengate-Policy` response header: one entry per change, e.g.
// `safetyLevel=raised;from=low;to=high, samples=clamped;from=8;to=4`. `from` is left out when the
// request sent no value.
import type { PolicyChange, PolicyValue } from './outcome.ts';

export const POLICY_HEADER = 'gengate-policy';

// Validated bodies only carry enum words, integers and booleans here; anything else is left out rather
// than risk a character a header value cannot hold.
const HEADER_SAFE_VALUE = /^[A-Za-z0-9._-]+$/;

function parameter(name: string, value: PolicyValue | undefined): string {
  if (value === undefined) return '';
  const text = String(value);
  return HEADER_SAFE_VALUE.test(text) ? `;${name}=${text}` : '';
}

/** The header value for `changes`; the caller sends the header only when there is at least one change. */
export function formatPolicyHeader(changes: readonly PolicyChange[]): string {
  return changes
    .map(
      ({ field, action, from, to }) => `${field}=${action}${parameter('from', from)}${parameter('to', to)}`,
    )
    .join(', ');
}
