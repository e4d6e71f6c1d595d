// Bounded by construction (docs/reliability.md, "Overload"): what clients that never read their answers, and
// an upstream whose answers are huge or never end, can make one replica hold stays within the chart's
// memory limit, and the replica stays ready and serves everyone else meanwhile. Against the real process,
// run with the image's V8 flags and the RSS shedding the chart sets (0.85 of its memory limit), one
// scenario per fresh process so that its peak resident set (VmHWM) is the scenario's own:
//   - 80 connections each send a 10 MiB create with one unknown member name, all at once, and never read;
//   - 20 connections each poll a 32 MiB record and never read;
//   - 8 creates whose upstream answer never ends.
// Before server.maxBytesInFlight (docs/decisions/0055-one-bound-on-bytes-in-flight.md) the first peaked at
// 577 MiB (every body read at once), the second at 1,184 MiB (every record held), and the third left the
// replica past its RSS shedding threshold: not ready, and another client's request answered 503.
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import {
  oneTenantConfig,
  startGatewayProcess,
  startSharedTokenSimulator,
  writeTempConfig,
  type GatewayProcess,
} from '../support/gateway-process.ts';
import { startMisbehavingUpstream, type MisbehavingUpstream } from '../support/misbehaving-upstream.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';
import { createFaultReport } from './support/report.ts';

const MIB = 1024 * 1024;
/** The chart's memory limit (helm/gengate/values.yaml, resources.limits.memory), which the bound must fit. */
function chartMemoryLimitBytes(): number {
  const values = readFileSync(new URL('../../helm/gengate/values.yaml', import.meta.url), 'utf8');
  const limit = /^ {2}limits:\n {4}memory: (\d+)Mi$/m.exec(values);
  if (limit === null) throw new Error('no resources.limits.memory in Mi in the chart values');
  return Number(limit[1]) * MIB;
}
const MEMORY_LIMIT_BYTES = chartMemoryLimitBytes();
// The chart's load shedding on memory: 0.85 of the container's limit (server.overload.maxRssRatio).
const SHED_RSS_BYTES = Math.floor(0.85 * MEMORY_LIMIT_BYTES);
// The image's V8 flags (Dockerfile CMD).
const IMAGE_NODE_FLAGS = ['--max-semi-space-size=16', '--heap-growing-percent=50'];
const BODY_LIMIT_BYTES = 10 * MIB;

const report = createFaultReport('memory');
const key = canaryTenantKey();
let simulator: SimulatorServer;
let upstream: MisbehavingUpstream;
beforeAll(async () => {
  simulator = await startSharedTokenSimulator({ queuedMs: 0, processingMs: 0, requestsPerMinute: 100_000 });
  upstream = await startMisbehavingUpstream(simulator.url);
});
afterAll(async () => {
  report.write();
  await upstream.close();
  await simulator.close();
});

async function startGateway(): Promise<GatewayProcess> {
  const path = await writeTempConfig(
    oneTenantConfig({
      upstreamUrl: upstream.url,
      keys: [key],
      // Shedding on memory only: 80 connections opened at once wait in the listen queue while bodies are
      // read, and a shed for that wait (server.overload.maxQueueWaitMs, test/faults/flood.test.ts) would
      // also make the replica unready for a Retry-After: what is measured here is memory.
      overload: `{ maxEventLoopDelayMs: 0, maxHeapUsedRatio: 1, maxQueueWaitMs: 0, maxRssBytes: ${SHED_RSS_BYTES} }`,
      server: `bodyLimitBytes: ${BODY_LIMIT_BYTES}`,
    }),
  );
  return startGatewayProcess(
    path,
    { SHARED_TOKEN: CANARY_UPSTREAM_TOKENS.shared, LOG_LEVEL: 'info' },
    IMAGE_NODE_FLAGS,
  );
}

/** The process's peak and current resident set, from the kernel. */
function residentSet(gateway: GatewayProcess): { peakMiB: number; nowMiB: number } {
  const status = readFileSync(`/proc/${gateway.child.pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1]);
  return { peakMiB: Math.round(kib('VmHWM') / 1024), nowMiB: Math.round(kib('VmRSS') / 1024) };
}

interface UnreadExchange {
  socket: Socket;
  /** "400 invalid_parameter", "503 overloaded", … from the first bytes of the answer, or "closed". */
  answer: Promise<string>;
}

/**
 * Sends `head` (and `body`) on a connection of its own and reads only the first bytes of the answer,
 * enough for its status and error code; the rest is never read, and the connection stays open.
 */
function sendWithoutReading(gateway: GatewayProcess, head: string[], body?: Buffer): UnreadExchange {
  const { hostname, port } = new URL(gateway.gatewayUrl);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => {
    // A body refused unread ends in a reset: 'close' follows.
  });
  const answer = new Promise<string>((resolve) => {
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      const text = chunk.toString('latin1');
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 'unparsed';
      const code = /"code":"([a-z_]+)"/.exec(text)?.[1];
      resolve(code === undefined ? status : `${status} ${code}`);
    });
    socket.once('close', () => {
      resolve('closed');
    });
  });
  socket.write(
    [
      ...head,
      `Host: ${hostname}:${port}`,
      `Authorization: Bearer ${key.key}`,
      ...(body === undefined ? [] : ['Content-Type: application/json', `Content-Length: ${body.length}`]),
      '',
      '',
    ].join('\r\n'),
  );
  if (body !== undefined) socket.write(body);
  return { socket, answer };
}

function tally(answers: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const answer of answers) counts[answer] = (counts[answer] ?? 0) + 1;
  return counts;
}

/** What a client other than the hostile ones gets meanwhile: the replica's readiness and a usage request. */
async function othersServed(gateway: GatewayProcess): Promise<{ ready: number; usage: number }> {
  const ready = (await fetch(`${gateway.adminUrl}/readyz`)).status;
  const usage = await fetch(`${gateway.gatewayUrl}/v1/account/usage`, {
    headers: { authorization: `Bearer ${key.key}` },
  });
  await usage.arrayBuffer();
  return { ready, usage: usage.status };
}

async function stop(gateway: GatewayProcess, exchanges: readonly UnreadExchange[]): Promise<void> {
  for (const { socket } of exchanges) socket.destroy();
  gateway.signal('SIGTERM');
  await gateway.exited;
}

/**
 * Once a scenario's answers are in: notes them with what another client got meanwhile and the process's
 * resident set, and holds the replica to the chart's limit and to serving everyone else.
 */
async function judge(
  gateway: GatewayProcess,
  scenario: string,
  startedMiB: number,
  answers: readonly string[],
): Promise<void> {
  const others = await othersServed(gateway);
  const memory = residentSet(gateway);
  report.note(scenario, { answers: tally(answers), others, startedMiB, ...memory });
  expect(memory.peakMiB * MIB).toBeLessThan(MEMORY_LIMIT_BYTES);
  expect(others).toEqual({ ready: 200, usage: 200 });
}

describe('memory held for exchanges stays within the chart’s memory limit', () => {
  test('80 connections each sending a 10 MiB create with an unknown member name, never reading', async () => {
    const gateway = await startGateway();
    const started = residentSet(gateway).nowMiB;
    const exchanges: UnreadExchange[] = [];
    try {
      const prefix = '{"input":{"positivePrompt":"a lighthouse"},"';
      const suffix = '":1}';
      const name = 'n'.repeat(BODY_LIMIT_BYTES - prefix.length - suffix.length);
      const body = Buffer.from(`${prefix}${name}${suffix}`);
      for (let index = 0; index < 80; index += 1) {
        exchanges.push(sendWithoutReading(gateway, ['POST /v1/images/generations HTTP/1.1'], body));
      }
      const answers = await Promise.all(exchanges.map((exchange) => exchange.answer));
      await judge(gateway, '80 unread 10 MiB creates', started, answers);
      // Each was refused for its unknown member (400), or before its body was read (503), or reset then.
      for (const answer of answers)
        expect(['400 unknown_parameter', '503 overloaded', 'closed']).toContain(answer);
      expect(answers).toContain('400 unknown_parameter');
    } finally {
      await stop(gateway, exchanges);
    }
  }, 120_000);

  test('20 connections each polling a 32 MiB record, never reading', async () => {
    const gateway = await startGateway();
    const started = residentSet(gateway).nowMiB;
    const exchanges: UnreadExchange[] = [];
    try {
      const requestIds: string[] = [];
      for (let index = 0; index < 20; index += 1) {
        const created = await fetch(`${gateway.gatewayUrl}/v1/images/generations`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ input: { positivePrompt: 'a lighthouse' } }),
        });
        expect(created.status).toBe(200);
        requestIds.push(((await created.json()) as { data: { requestId: string } }).data.requestId);
      }
      const padding = 'p'.repeat(32 * MIB);
      upstream.twist(
        (answer) => ({ ...answer, body: `${answer.body.slice(0, -1)},"padding":"${padding}"}` }),
        {
          method: 'GET',
          pathPrefix: '/v1/images/generations/',
        },
      );
      for (const requestId of requestIds) {
        exchanges.push(sendWithoutReading(gateway, [`GET /v1/images/generations/${requestId} HTTP/1.1`]));
      }
      const answers = await Promise.all(exchanges.map((exchange) => exchange.answer));
      upstream.twist(undefined);
      await judge(gateway, '20 unread 32 MiB polls', started, answers);
      for (const answer of answers) expect(['200', '503 overloaded']).toContain(answer);
      expect(answers).toContain('200');
    } finally {
      upstream.twist(undefined);
      await stop(gateway, exchanges);
    }
  }, 120_000);

  test('8 creates whose upstream answer never ends', async () => {
    const gateway = await startGateway();
    const started = residentSet(gateway).nowMiB;
    try {
      const endlessChunk = Buffer.alloc(MIB, ' ');
      upstream.twist(
        (answer) => ({ ...answer, body: '{"status":200,"data":{"requestId":"x"', endlessChunk }),
        {
          method: 'POST',
          pathPrefix: '/v1/images/generations',
        },
      );
      const answers = await Promise.all(
        Array.from({ length: 8 }, async () => {
          const response = await fetch(`${gateway.gatewayUrl}/v1/images/generations`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ input: { positivePrompt: 'a lighthouse' } }),
          });
          const { error } = (await response.json()) as { error: { code: string } };
          return `${response.status} ${error.code}`;
        }),
      );
      upstream.twist(undefined);
      await judge(gateway, '8 endless upstream answers', started, answers);
      for (const answer of answers) expect(['502 upstream_unavailable', '503 overloaded']).toContain(answer);
    } finally {
      upstream.twist(undefined);
      await stop(gateway, []);
    }
  }, 120_000);
});
