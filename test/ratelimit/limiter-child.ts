// A rate limiter in a process of its own, so a test can run it with its clock off by an hour
// (test/support/shifted-clock.ts). Usage: node limiter-child.ts <redis url> <tenant> <limits JSON>;
// prints one JSON line with the process clock and the headers of one check.
import { rateLimitHeaders } from '../../src/ratelimit/headers.ts';
import type { LimitRequest } from '../../src/ratelimit/types.ts';
import { startTestLimiter } from './limiter-support.ts';

const [url, tenant, limitsJson] = process.argv.slice(2);
if (url === undefined || tenant === undefined || limitsJson === undefined)
  throw new Error('usage: <url> <tenant> <limits>');
const limits = JSON.parse(limitsJson) as LimitRequest[];
const replica = await startTestLimiter({ url });
const decision = await replica.limiter.check(tenant, limits);
process.stdout.write(
  `${JSON.stringify({ processNowMs: Date.now(), headers: rateLimitHeaders(decision) })}\n`,
);
await replica.close();
