// Logs (docs/operations.md#logs) on a real gengate process at LOG_LEVEL=trace: one line per request with
// reqId (the X-Request-Id) and generationId (one id follows a job from its create through every poll),
// prompts only with logging.prompts: true, and no line at any level with a key, a token or the raw bytes
// of a request, Fastify's own client-error lines included.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import {
  oneTenantConfig,
  startGatewayProcess,
  startSharedTokenSimulator,
  writeTempConfig,
  type GatewayProcess,
} from '../support/gateway-process.ts';
import { sendRaw } from '../support/raw-http.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';

const TOKEN = CANARY_UPSTREAM_TOKENS.shared;
// Bytes that only ever travel inside requests: in a log line they would be raw request data.
const RAW_CANARY = 'rawbytes_canary_95d3e1';
const POSITIVE_PROMPT = 'a lighthouse at dusk, prompt_canary_positive';
const NEGATIVE_PROMPT = 'blurry, prompt_canary_negative';
const IMAGES = '/v1/images/generations';
const VIDEOS = '/v1/videos/generations';

let simulator: SimulatorServer;
beforeAll(async () => {
  simulator = await startSharedTokenSimulator({ queuedMs: 0, processingMs: 0, requestsPerMinute: 100_000 });
});
afterAll(async () => {
  await simulator.close();
});

interface Run {
  lines: Record<string, unknown>[];
  /** Everything the process wrote, stdout and stderr. */
  output: string;
  key: string;
  created: { image: string; video: string };
}

/** Runs a gengate at trace, sends every kind of request, stops it (flushing its log) and returns its output. */
async function runGateway(logPrompts: boolean): Promise<Run> {
  const key = canaryTenantKey();
  const config = oneTenantConfig({ upstreamUrl: simulator.url, keys: [key] });
  const gateway = await startGatewayProcess(
    await writeTempConfig(`${config}logging: { prompts: ${String(logPrompts)} }\n`),
    { SHARED_TOKEN: TOKEN, LOG_LEVEL: 'trace' },
  );
  try {
    const created = await driveTraffic(gateway, key.key);
    gateway.signal('SIGTERM');
    expect(await gateway.exited).toBe(0);
    return {
      lines: gateway.lines,
      output: gateway.lines.map((line) => JSON.stringify(line)).join('\n') + gateway.stderr.join(''),
      key: key.key,
      created,
    };
  } finally {
    if (gateway.child.exitCode === null) gateway.signal('SIGKILL');
  }
}

async function call(gateway: GatewayProcess, key: string, method: string, path: string, body?: string) {
  const response = await fetch(`${gateway.gatewayUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body }),
  });
  return { status: response.status, body: (await response.json()) as { data?: { requestId?: string } } };
}

/** Bytes written on a fresh connection as they are, whatever comes back. */
async function sendBytes(gateway: GatewayProcess, bytes: string): Promise<string> {
  const { hostname, port } = new URL(gateway.gatewayUrl);
  const socket = connect(Number(port), hostname);
  socket.end(bytes);
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function driveTraffic(gateway: GatewayProcess, key: string) {
  const input = `"input":{"positivePrompt":"${POSITIVE_PROMPT}","negativePrompt":"${NEGATIVE_PROMPT}"}`;
  // A job whose id the gateway assigns, polled twice; a video whose id the client chose, polled, cancelled.
  const image = await call(gateway, key, 'POST', IMAGES, `{${input}}`);
  expect(image.status).toBe(200);
  const imageId = image.body.data?.requestId ?? '';
  for (let poll = 0; poll < 2; poll++) {
    expect((await call(gateway, key, 'GET', `${IMAGES}/${imageId}`)).status).toBe(200);
  }
  const videoId = crypto.randomUUID();
  const video = await call(gateway, key, 'POST', VIDEOS, `{"duration":5,${input},"requestId":"${videoId}"}`);
  expect(video.status).toBe(200);
  expect((await call(gateway, key, 'GET', `${VIDEOS}/${videoId}`)).status).toBe(200);
  await call(gateway, key, 'DELETE', `${VIDEOS}/${videoId}`);
  // Refused ones: a body that is not JSON, an unknown field, a wrong key, an unknown route.
  expect((await call(gateway, key, 'POST', IMAGES, `{"model":"${RAW_CANARY}`)).status).toBe(400);
  expect((await call(gateway, key, 'POST', IMAGES, `{"${RAW_CANARY}":1}`)).status).toBe(400);
  expect((await call(gateway, `ggk_${RAW_CANARY}${'x'.repeat(20)}`, 'GET', '/v1/account/usage')).status).toBe(
    401,
  );
  expect((await call(gateway, key, 'GET', `/${RAW_CANARY}`)).status).toBe(404);
  // What the HTTP parser refuses, each carrying the key: garbage, a broken header, headers too large.
  expect(await sendBytes(gateway, `${RAW_CANARY} ${key}\r\n\r\n`)).toMatch(/^HTTP\/1\.1 400 /);
  expect(
    await sendBytes(
      gateway,
      `GET /v1/account/usage HTTP/1.1\r\nAuthorization: Bearer ${key}\r\n${RAW_CANARY}\r\n\r\n`,
    ),
  ).toMatch(/^HTTP\/1\.1 400 /);
  const oversized = await sendRaw(gateway.gatewayUrl, 'GET', '/v1/account/usage', {
    authorization: `Bearer ${key}`,
    'x-padding': RAW_CANARY.repeat(2_000),
  });
  expect(oversized.status).toBe(431);
  return { image: imageId, video: videoId };
}

/** A secret as text, and as a logged Buffer would show it (pino writes a Buffer's bytes as numbers). */
function asLogged(secret: string): string[] {
  const bytes = Buffer.from(secret);
  return [secret, bytes.toJSON().data.join(','), bytes.toString('base64'), bytes.toString('hex')];
}

function expectNoSecrets(run: Run): void {
  for (const secret of [run.key, TOKEN, RAW_CANARY]) {
    for (const form of asLogged(secret)) expect(run.output).not.toContain(form);
  }
}

function requestLines(run: Run) {
  return run.lines.filter((line) => line.msg === 'request');
}

describe('logging.prompts: false (the default)', () => {
  let run: Run;
  beforeAll(async () => {
    run = await runGateway(false);
  });

  test('no line carries a key, a token or raw request bytes, at any level', () => {
    expect(run.lines.length).toBeGreaterThan(10);
    expectNoSecrets(run);
  });

  test('no line carries a prompt', () => {
    expect(run.output).not.toContain('prompt_canary');
  });

  test('one grep on a generation id finds its create and every poll, each with its own reqId', () => {
    const imageLines = requestLines(run).filter((line) => line.generationId === run.created.image);
    expect(imageLines.map((line) => [line.route, line.method, line.status])).toEqual([
      ['images.create', 'POST', 200],
      ['images.get', 'GET', 200],
      ['images.get', 'GET', 200],
    ]);
    expect(new Set(imageLines.map((line) => line.reqId)).size).toBe(3);
    const videoLines = requestLines(run).filter((line) => line.generationId === run.created.video);
    expect(videoLines.map((line) => line.route)).toEqual(['videos.create', 'videos.get', 'videos.delete']);
    expect(run.output.split('\n').filter((line) => line.includes(run.created.image))).toHaveLength(3);
  });

  test('the request line: its allowlisted fields only', () => {
    const [create] = requestLines(run);
    expect(Object.keys(create ?? {}).sort()).toEqual(
      [
        'clientAddress',
        'durationMs',
        'generationId',
        'keyPrefix',
        'level',
        'method',
        'msg',
        'reqId',
        'route',
        'service',
        'status',
        'tenant',
        'time',
        'upstreamMs',
      ].sort(),
    );
  });

  test("what the HTTP parser refuses is logged by its error code, the answer's status and id", () => {
    const clientErrors = run.lines.filter((line) => line.msg === 'client error');
    expect(clientErrors.map(({ status, errorCode }) => ({ status, errorCode }))).toEqual([
      { status: 400, errorCode: 'HPE_INVALID_METHOD' },
      { status: 400, errorCode: 'HPE_INVALID_HEADER_TOKEN' },
      { status: 431, errorCode: 'HPE_HEADER_OVERFLOW' },
    ]);
    for (const line of clientErrors) expect(line.reqId).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('logging.prompts: true', () => {
  let run: Run;
  beforeAll(async () => {
    run = await runGateway(true);
  });

  test("the prompts are on the create's line, and only there", () => {
    const withPrompts = requestLines(run).filter((line) => line.positivePrompt !== undefined);
    expect(withPrompts.map((line) => [line.route, line.positivePrompt, line.negativePrompt])).toEqual([
      ['images.create', POSITIVE_PROMPT, NEGATIVE_PROMPT],
      ['videos.create', POSITIVE_PROMPT, NEGATIVE_PROMPT],
    ]);
    expect(run.output.split('\n').filter((line) => line.includes('prompt_canary'))).toHaveLength(2);
  });

  test('still no key, token or raw request bytes', () => {
    expectNoSecrets(run);
  });
});
