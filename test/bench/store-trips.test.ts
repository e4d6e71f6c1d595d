// `npm run bench` counts gengate's Redis commands per create from MONITOR (bench/store-trips.ts), telling
// round trips (a client's address) from commands run inside scripts ("lua"). The counts mean something
// only if every command after MONITOR's OK is read with its source. Regression: ioredis's own monitor()
// threw "Command queue state error" when a command came in the same read as that OK, and aborted a run.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startMonitor } from '../../bench/store-trips.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';
import { waitFor } from '../support/wait-for.ts';

let redis: RedisServer;
let client: Redis;

beforeAll(async () => {
  redis = await startRedisServer();
  client = new Redis(redis.url);
  // Connected, its ready check (INFO) done: what MONITOR reports afterwards is the test's own.
  await client.ping();
});

afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

test('reports every command after its OK, with its first argument and its source', async () => {
  const seen: { command: string; firstArgument: string | undefined; source: string }[] = [];
  // A client's address, or "lua" for a command a script ran.
  const sourceKind = (source: string) => (/^127\.0\.0\.1:\d+$/.test(source) ? 'a client' : source);
  // A client already busy when MONITOR starts: its commands may share a read with the OK.
  const stopBackground = new AbortController();
  const background = (async () => {
    while (!stopBackground.signal.aborted) await client.incr('background');
  })();
  const monitor = await startMonitor(redis.port, (command, firstArgument, source) => {
    if (command !== 'incr') seen.push({ command, firstArgument, source: sourceKind(source) });
  });
  try {
    await client.set('key', 'a "quoted" value');
    await client.eval("return redis.call('GET', KEYS[1])", 1, 'key');
    await client.echo('the end');
    await waitFor('the echo to be reported', () => seen.some(({ command }) => command === 'echo'));
  } finally {
    stopBackground.abort();
    await background;
    monitor.destroy();
  }
  expect(seen).toEqual([
    { command: 'set', firstArgument: 'key', source: 'a client' },
    { command: 'eval', firstArgument: "return redis.call('GET', KEYS[1])", source: 'a client' },
    { command: 'GET', firstArgument: 'key', source: 'lua' },
    { command: 'echo', firstArgument: 'the end', source: 'a client' },
  ]);
});
