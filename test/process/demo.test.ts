// The demo of `npm start` (README.md#quick-start): config/demo.yaml as shipped, run
// as its own process, with the two demo tenants and their published keys walking all seven routes.
// Only the ports (free ones, so the test can run beside anything) and the stage durations change.
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { gengateVersion } from '../../src/cli/arguments.ts';
import { startGatewayProcess, type GatewayProcess } from '../support/gateway-process.ts';
import { waitFor } from '../support/wait-for.ts';
import { freePort } from '../support/free-port.ts';
import { makeTempFolder } from '../support/temp-folders.ts';

// The demo keys published in README.md and config/demo-secrets/README.md.
const DEMO_KEYS = {
  studio: 'ggk_8oTyg84yLldiuo0NRnPaEDI1dsiGyPgAhBmNcXO3',
  lab: 'ggk_HGtfdDkRPXoHUau8lClcgpm7LEUKXnBdtQLhvCg4',
} as const;

/** The members of the answers this walk reads. */
interface DemoData {
  requestId: string;
  status: string;
  safetyLevel: string;
}

let gateway: GatewayProcess;
let configPath: string;
beforeAll(async () => {
  const dir = await makeTempFolder('gengate-demo-');
  await cp('config/demo-secrets', join(dir, 'demo-secrets'), { recursive: true });
  const simulatorPort = await freePort();
  const shipped = await readFile('config/demo.yaml', 'utf8');
  // The demo's keys are public: it listens on loopback only (README.md#quick-start).
  expect(shipped).toContain('server: { host: 127.0.0.1, port: 8080 }');
  expect(shipped).toContain('admin: { host: 127.0.0.1, port: 9090 }');
  const demo = shipped
    .replace('server: { host: 127.0.0.1, port: 8080 }', 'server: { host: 127.0.0.1, port: 0 }')
    .replace('admin: { host: 127.0.0.1, port: 9090 }', 'admin: { host: 127.0.0.1, port: 0 }')
    .replace('baseUrl: http://127.0.0.1:8090', `baseUrl: http://127.0.0.1:${simulatorPort}`)
    .replace('port: 8090', `port: ${simulatorPort}`)
    .replace('queuedMs: 1500', 'queuedMs: 0')
    .replace('processingMs: 2500', 'processingMs: 0');
  expect(demo).toContain(`port: ${simulatorPort}`);
  configPath = join(dir, 'demo.yaml');
  await writeFile(configPath, demo);
  gateway = await startGatewayProcess(configPath);
});

afterAll(async () => {
  gateway.signal('SIGTERM');
  expect(await gateway.exited).toBe(0);
});

async function call(tenant: keyof typeof DEMO_KEYS, method: string, path: string, body?: unknown) {
  const response = await fetch(`${gateway.gatewayUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${DEMO_KEYS[tenant]}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as { data: DemoData },
  };
}

test('its start-up lines name the file, the version, the tenants, and each server by its role', () => {
  const starting = gateway.lines.find((line) => line.msg === 'gengate starting');
  expect(starting).toMatchObject({
    level: 30,
    config: configPath,
    configFrom: '--config',
    version: gengateVersion(),
    tenants: 2,
  });
  const listening = gateway.lines.map((line) => line.msg).filter((msg) => String(msg).includes('listening'));
  expect(listening).toEqual([
    gateway.gatewayUrl.replace('http://', 'gateway listening at http://'),
    gateway.adminUrl.replace('http://', 'admin listening at http://'),
  ]);
});

describe.each(['studio', 'lab'] as const)('the %s demo tenant', (tenant) => {
  test('walks all seven routes', async () => {
    const image = await call(tenant, 'POST', '/v1/images/generations', {
      input: { positivePrompt: 'a lighthouse' },
    });
    expect(image.status).toBe(200);
    const imageId = image.body.data.requestId;
    const record = await call(tenant, 'GET', `/v1/images/generations/${imageId}`);
    expect(record.status).toBe(200);
    expect(record.body.data.status).toBe('completed');
    // studio's policy raises every image to safetyLevel high; lab's leaves medium alone.
    expect(record.body.data.safetyLevel).toBe(tenant === 'studio' ? 'high' : 'medium');

    const video = await call(tenant, 'POST', '/v1/videos/generations', { duration: 5 });
    expect(video.status).toBe(200);
    const videoId = video.body.data.requestId;
    expect((await call(tenant, 'GET', `/v1/videos/generations/${videoId}`)).status).toBe(200);
    expect((await call(tenant, 'DELETE', `/v1/videos/generations/${videoId}`)).status).toBe(200);

    for (const path of ['/v1/account/usage', '/v1/usage', '/v1/account/keys', '/v1/keys']) {
      const answer = await call(tenant, 'GET', path);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('deprecation')).toBe(path.startsWith('/v1/account/') ? null : 'true');
    }
    const keys = await call(tenant, 'GET', '/v1/account/keys');
    expect(keys.body.data).toEqual([
      expect.objectContaining({ partialKey: DEMO_KEYS[tenant].slice(0, 8), name: 'demo' }),
    ]);
  });
});

test("a demo tenant cannot read the other's request", async () => {
  const image = await call('studio', 'POST', '/v1/images/generations', {});
  const id = image.body.data.requestId;
  expect((await call('lab', 'GET', `/v1/images/generations/${id}`)).status).toBe(404);
});

test('a request is logged as it is answered, not only when the gateway stops', async () => {
  const image = await call('lab', 'POST', '/v1/images/generations', {});
  const requestId = image.headers.get('x-request-id');
  expect(requestId).toBeTruthy();
  await waitFor('the request log line', () => gateway.lines.some((line) => line.reqId === requestId), 2_000);
  expect(gateway.lines.find((line) => line.reqId === requestId)).toMatchObject({
    msg: 'request',
    tenant: 'lab',
    route: 'images.create',
    status: 200,
  });
});
