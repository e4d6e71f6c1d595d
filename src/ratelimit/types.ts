// What the gateway asks the rate limiter and what it gets back (docs/rate-limits.md).

/** One applicable tenant limit and what this request costs against it (1, samples or video seconds). */
export interface LimitRequest {
  id: string;
  limit: number;
  windowSeconds: number;
  cost: number;
}

/** One limit after the decision, in the units the response headers use. */
export interface LimitState {
  id: string;
  limit: number;
  windowSeconds: number;
  cost: number;
  /** Units left after this request (nothing was charged when it was refused), 0..limit. */
  remaining: number;
  /** UTC epoch seconds, rounded up, at which the limit is full again (store clock). */
  resetEpochSeconds: number;
  /** Seconds, rounded up, until the limit is full again. */
  secondsUntilFull: number;
}

export type RateOutcome = 'admitted' | 'rate_limited' | 'cost_exceeds_limit' | 'store_unavailable';

export interface RateDecision {
  outcome: RateOutcome;
  /** Every applicable limit, in the order asked; empty for store_unavailable and cost_exceeds_limit. */
  limits: LimitState[];
  /** On refusal the limit with the longest wait; otherwise the one with the fewest units left. */
  binding: LimitState | undefined;
  /** For cost_exceeds_limit: the first limit whose whole capacity is below the cost. */
  exceeded?: LimitRequest;
  /** False when the decision did not come from the shared store: then only Retry-After may be sent. */
  exact: boolean;
  /** Whole seconds, at least 1, for rate_limited and store_unavailable. */
  retryAfterSeconds?: number;
}

export interface RateLimiter {
  /**
   * Decides and charges. With `peek` (every cost 0) it charges nothing and tells where the limits stand
   * (the Redis script rewrites each state as it was, which gives back a TTL it had lost), and the
   * decision is not counted in gengate_rate_limit_decisions_total.
   */
  check(
    tenantId: string,
    limits: readonly LimitRequest[],
    options?: { peek?: boolean },
  ): Promise<RateDecision>;
  /** True while the shared store is failing and decisions come from the fallback (or are refused). */
  readonly degraded: boolean;
  close(): Promise<void>;
}
