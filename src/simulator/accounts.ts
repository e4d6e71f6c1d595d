// One upstream account per configured token: who is calling, its requests-per-minute window and the
// key it is known by. Tokens are compared and kept here only; nothing derived from them is logged.
import { createHash, timingSafeEqual } from 'node:crypto';

export interface SimulatedToken {
  token: string;
  /** Account name; the account's userId is derived from it. */
  name: string;
}

export interface Account {
  name: string;
  userId: string;
  keyId: string;
  /** The token's first characters, as the service shows a key (never the whole token). */
  partialKey: string;
}

export interface RateDecision {
  admitted: boolean;
  limit: number;
  remaining: number;
  /** Absolute UTC epoch seconds at which the window resets. */
  resetEpochSeconds: number;
  /** Whole seconds until the window resets, at least 1. */
  retryAfterSeconds: number;
}

export interface AccountRegistry {
  /** The account of an `Authorization: Bearer <token>` header; `missing` or `unknown` otherwise. */
  authenticate(authorization: string | undefined): Account | 'missing' | 'unknown';
  /** Counts one request against the account's fixed 60-second window. */
  chargeRequest(account: Account): RateDecision;
  /** Admitted requests in the current calendar month (UTC). */
  requestsThisMonth(account: Account): number;
}

const RATE_WINDOW_MS = 60_000;
const PARTIAL_KEY_LENGTH = 8;
const BEARER = /^Bearer +(\S+) *$/i;

export function startOfMonthUtc(epochMs: number): number {
  const date = new Date(epochMs);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function describeAccount({ token, name }: SimulatedToken): Account {
  return {
    name,
    userId: `user_${name}`,
    keyId: `key_${digest(token).toString('hex').slice(0, 16)}`,
    // At most half of a short token, so the partial key can never be the whole token.
    partialKey: `${token.slice(0, Math.min(PARTIAL_KEY_LENGTH, token.length >> 1))}…`,
  };
}

export function createAccountRegistry(
  tokens: SimulatedToken[],
  options: { requestsPerMinute: number; clock: () => number },
): AccountRegistry {
  // Keyed by the token's digest and compared in constant time, as a real service would.
  const byDigest = new Map(
    tokens.map((entry) => [digest(entry.token).toString('hex'), describeAccount(entry)]),
  );
  const windows = new Map<Account, { startMs: number; count: number }>();
  const monthlyRequests = new Map<Account, { monthStartMs: number; count: number }>();

  function countThisMonth(account: Account, now: number): { monthStartMs: number; count: number } {
    const monthStartMs = startOfMonthUtc(now);
    const current = monthlyRequests.get(account);
    if (current?.monthStartMs === monthStartMs) return current;
    const fresh = { monthStartMs, count: 0 };
    monthlyRequests.set(account, fresh);
    return fresh;
  }

  function find(token: string): Account | undefined {
    const wanted = digest(token);
    for (const [hex, account] of byDigest) {
      if (timingSafeEqual(Buffer.from(hex, 'hex'), wanted)) return account;
    }
    return undefined;
  }

  return {
    authenticate(authorization) {
      if (authorization === undefined || authorization === '') return 'missing';
      const token = BEARER.exec(authorization)?.[1];
      return (token === undefined ? undefined : find(token)) ?? 'unknown';
    },
    chargeRequest(account) {
      const now = options.clock();
      let window = windows.get(account);
      if (window === undefined || now >= window.startMs + RATE_WINDOW_MS) {
        // Windows start on a whole second so that Reset is an exact epoch second, at most 60 s ahead.
        window = { startMs: Math.floor(now / 1000) * 1000, count: 0 };
        windows.set(account, window);
      }
      const resetMs = window.startMs + RATE_WINDOW_MS;
      const admitted = window.count < options.requestsPerMinute;
      if (admitted) {
        window.count += 1;
        countThisMonth(account, now).count += 1;
      }
      return {
        admitted,
        limit: options.requestsPerMinute,
        remaining: options.requestsPerMinute - window.count,
        resetEpochSeconds: resetMs / 1000,
        retryAfterSeconds: Math.max(1, Math.ceil((resetMs - now) / 1000)),
      };
    },
    requestsThisMonth: (account) => countThisMonth(account, options.clock()).count,
  };
}
