// `node bench/feature-costs.ts` reads the least gateway (bench/least-gateway.ts) as a lower bound on what
// any design of gengate costs on its stack (docs/performance.md). The bound means something only if the
// least gateway does the work its rows name: it answers as the upstream does, and with every option on it
// writes one log line per request and claims each request's id in Redis, charging one counter. A step
// that silently did nothing would make the bound look lower than it is.
import { readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startLeastGateway, startStaticUpstream, type Listening } from '../../bench/baselines.ts';
import {
  LEAST_GATEWAY_KEY,
  SUBMISSION_BODY,
  SUBMISSION_PATH,
  SUBMISSION_RESPONSE,
} from '../../bench/request-body.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait-for.ts';

const REQUESTS = 12;

let redis: RedisServer;
let upstream: Listening;
let least: Listening;
let logFile: string;

beforeAll(async () => {
  redis = await startRedisServer();
  upstream = await startStaticUpstream();
  logFile = join(mkdtempSync(join(tmpdir(), 'least-gateway-')), 'least-gateway.log');
  least = await startLeastGateway(
    `http://127.0.0.1:${upstream.port}`,
    { checks: true, log: true, redisUrl: redis.url },
    logFile,
  );
});

afterAll(async () => {
  await least.process.stop();
  await upstream.process.stop();
  await redis.stop();
});

function logLines(): { msg?: string; status?: number }[] {
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { msg?: string; status?: number });
}

test('with every option, each create is answered as the upstream answers, logged once and claimed once in Redis', async () => {
  // Sent together, so that some share an event-loop turn and one script call.
  const answers = await Promise.all(
    Array.from({ length: REQUESTS }, () =>
      fetch(`http://127.0.0.1:${least.port}${SUBMISSION_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${LEAST_GATEWAY_KEY}` },
        body: SUBMISSION_BODY,
      }),
    ),
  );
  for (const answer of answers) {
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe(SUBMISSION_RESPONSE);
  }
  const client = redis.client();
  expect(await client.get('least:charge:bench')).toBe(String(REQUESTS));
  expect(await client.keys('least:claim:*')).toHaveLength(REQUESTS);
  // Lines are written in batches at least every 250 ms.
  await waitFor(
    'a log line per request',
    () => logLines().filter((line) => line.msg === 'request completed').length === REQUESTS,
  );
  expect(
    logLines()
      .filter((line) => line.msg === 'request completed')
      .map((line) => line.status),
  ).toEqual(Array.from({ length: REQUESTS }, () => 200));
});

test('a key it does not know is refused before the store: the lookup is a real one', async () => {
  const client = redis.client();
  const claimsBefore = (await client.keys('least:claim:*')).length;
  const answer = await fetch(`http://127.0.0.1:${least.port}${SUBMISSION_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer ggk_someone_else' },
    body: SUBMISSION_BODY,
  });
  expect(answer.status).toBe(401);
  expect(await client.keys('least:claim:*')).toHaveLength(claimsBefore);
});
