// "Why was I refused?" answered from the request's log line alone (docs/operations.md): on a real gengate
// process behind a trusted proxy, each refusal's line carries its error code, the key prefix (never the
// key), the tenant (an expired key's too), the binding rate limit and its decision, the client address
// as server.trustProxy defines it, and, once authentication failures are blocked, the blocked address.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import {
  startGatewayProcess,
  startSharedTokenSimulator,
  writeTempConfig,
  type GatewayProcess,
} from '../support/gateway-process.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';
import { waitFor } from '../support/wait-for.ts';

const USAGE = '/v1/account/usage';
// Documentation addresses (RFC 5737), sent in X-Forwarded-For through the trusted loopback proxy.
const TENANT_ADDRESS = '203.0.113.7';
const GUESSER_ADDRESS = '198.51.100.9';

let simulator: SimulatorServer;
let gateway: GatewayProcess;
const valid = canaryTenantKey();
const expired = canaryTenantKey();

beforeAll(async () => {
  simulator = await startSharedTokenSimulator();
  const config = [
    'server:',
    '  { host: 127.0.0.1, port: 0, trustProxy: true, authenticationFailures: { limit: 2, windowSeconds: 3600 } }',
    'admin: { host: 127.0.0.1, port: 0 }',
    `upstream: { baseUrl: "${simulator.url}", credentials: { shared: { env: SHARED_TOKEN } } }`,
    'store: { kind: memory }',
    'tenants:',
    '  - id: team-a',
    '    credential: shared',
    '    keys:',
    `      - { sha256: "${valid.sha256}", prefix: "${valid.prefix}" }`,
    `      - { sha256: "${expired.sha256}", prefix: "${expired.prefix}", expiresAt: 2020-01-01T00:00:00Z }`,
    '    limits: [{ id: requests, routes: ["*"], cost: requests, limit: 1, windowSeconds: 3600 }]',
    '',
  ].join('\n');
  gateway = await startGatewayProcess(await writeTempConfig(config), {
    SHARED_TOKEN: CANARY_UPSTREAM_TOKENS.shared,
    LOG_LEVEL: 'info',
  });
});
afterAll(async () => {
  gateway.signal('SIGTERM');
  await gateway.exited;
  await simulator.close();
});

async function get(key: string, from: string): Promise<{ status: number; reqId: string }> {
  const response = await fetch(`${gateway.gatewayUrl}${USAGE}`, {
    headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': from },
  });
  await response.arrayBuffer();
  return { status: response.status, reqId: response.headers.get('x-request-id') ?? '' };
}

/** The request's log line, once written (lines are written asynchronously). */
async function lineOf(reqId: string): Promise<Record<string, unknown>> {
  let line: Record<string, unknown> | undefined;
  await waitFor(`the log line of ${reqId}`, () => {
    line = gateway.lines.find((entry) => entry.reqId === reqId && entry.msg === 'request');
    return line !== undefined;
  });
  const { generationId, tenant, route, method, status, errorCode, keyPrefix, clientAddress } = line ?? {};
  const { blockedAddress, limit, limitDecision } = line ?? {};
  return {
    generationId,
    tenant,
    route,
    method,
    status,
    errorCode,
    keyPrefix,
    clientAddress,
    blockedAddress,
    limit,
    limitDecision,
  };
}

const base = { generationId: undefined, route: 'account.usage', method: 'GET', blockedAddress: undefined };

describe('the log line of each answer', () => {
  test('admitted, then refused by the binding limit: the limit id and the decision', async () => {
    const admitted = await get(valid.key, TENANT_ADDRESS);
    expect(admitted.status).toBe(200);
    expect(await lineOf(admitted.reqId)).toEqual({
      ...base,
      tenant: 'team-a',
      status: 200,
      errorCode: undefined,
      keyPrefix: valid.prefix,
      clientAddress: TENANT_ADDRESS,
      limit: 'requests',
      limitDecision: 'admitted',
    });
    const refused = await get(valid.key, TENANT_ADDRESS);
    expect(refused.status).toBe(429);
    expect(await lineOf(refused.reqId)).toEqual({
      ...base,
      tenant: 'team-a',
      status: 429,
      errorCode: 'rate_limited',
      keyPrefix: valid.prefix,
      clientAddress: TENANT_ADDRESS,
      limit: 'requests',
      limitDecision: 'rate_limited',
    });
  });

  test('an expired key: the tenant it belonged to and its prefix', async () => {
    const refused = await get(expired.key, TENANT_ADDRESS);
    expect(refused.status).toBe(401);
    expect(await lineOf(refused.reqId)).toEqual({
      ...base,
      tenant: 'team-a',
      status: 401,
      errorCode: 'expired_api_key',
      keyPrefix: expired.prefix,
      clientAddress: TENANT_ADDRESS,
      limit: undefined,
      limitDecision: undefined,
    });
  });

  test('unknown keys, then the blocked address once they pass the failure limit', async () => {
    const guess = canaryTenantKey();
    const first = await get(guess.key, GUESSER_ADDRESS);
    const second = await get(guess.key, GUESSER_ADDRESS);
    const blocked = await get(guess.key, GUESSER_ADDRESS);
    expect([first.status, second.status, blocked.status]).toEqual([401, 401, 429]);
    const refusal = {
      ...base,
      tenant: undefined,
      keyPrefix: guess.prefix,
      clientAddress: GUESSER_ADDRESS,
      limit: undefined,
      limitDecision: undefined,
    };
    expect(await lineOf(first.reqId)).toEqual({ ...refusal, status: 401, errorCode: 'invalid_api_key' });
    expect(await lineOf(blocked.reqId)).toEqual({
      ...refusal,
      status: 429,
      errorCode: 'too_many_authentication_failures',
      blockedAddress: GUESSER_ADDRESS,
    });
  });
});
