// The sender against real receivers and a real DNS server, all on loopback: what is listed is delivered,
// what is not is never connected to (counted by the receiver itself), a name looked up once per attempt,
// no redirect followed, the answer read only up to its bound, the attempt bounded in time.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { compileDestinations } from '../../src/webhooks/destinations.ts';
import {
  resolveWithServers,
  sendAttempt,
  type ResolveHost,
  type SendOptions,
} from '../../src/webhooks/send.ts';
import { startDnsServer, type DnsServer } from '../support/dns-server.ts';
import { answerStatus, startReceiver, type Receiver } from './support/receiver.ts';

let dns: DnsServer;
const receivers: Receiver[] = [];
const lookups: string[] = [];

beforeAll(async () => {
  dns = await startDnsServer({});
});
afterAll(async () => {
  await dns.stop();
});
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
  lookups.length = 0;
});

async function receiver(host: string, status = 204): Promise<Receiver> {
  const started = await startReceiver(host, answerStatus(status));
  receivers.push(started);
  return started;
}

function options(allowedDestinations: string[], overrides: Partial<SendOptions> = {}): SendOptions {
  const resolve = resolveWithServers([dns.address]);
  const countingResolve: ResolveHost = async (hostname) => {
    lookups.push(hostname);
    return resolve(hostname);
  };
  return {
    judge: compileDestinations({ allowedDestinations, allowHttp: allowedDestinations }),
    resolveHost: countingResolve,
    timeoutMs: 5_000,
    maxResponseBytes: 64 * 1024,
    ...overrides,
  };
}

const send = (url: string, sendOptions: SendOptions) =>
  sendAttempt(new URL(url), { 'webhook-id': 'msg_1' }, '{"a":1}', sendOptions);

describe('webhook sender', () => {
  it('delivers to a listed name at a listed loopback address, looking the name up once', async () => {
    const target = await receiver('127.0.0.1');
    await dns.setHosts({ 'hooks.team-a.test': ['127.0.0.1'] });
    const result = await send(`http://hooks.team-a.test:${target.port}/hook?x=1`, options(['127.0.0.1/32']));
    expect(result).toEqual({ kind: 'answered', status: 204 });
    expect(lookups).toEqual(['hooks.team-a.test']);
    expect(target.requests).toHaveLength(1);
    expect(target.requests[0]?.url).toBe('/hook?x=1');
    expect(target.requests[0]?.headers.host).toBe(`hooks.team-a.test:${target.port}`);
    expect(target.requests[0]?.headers['content-type']).toBe('application/json');
    expect(target.requests[0]?.body).toBe('{"a":1}');
  });

  it('refuses an address outside the list and never connects to it', async () => {
    const outside = await receiver('127.0.0.2');
    await dns.setHosts({ 'hooks.team-a.test': ['127.0.0.2'] });
    const url = `http://hooks.team-a.test:${outside.port}/`;
    expect(await send(url, options(['127.0.0.1/32', 'hooks.team-a.test']))).toEqual({
      kind: 'refused',
      reason: 'not_listed',
    });
    expect(await send(`http://127.0.0.2:${outside.port}/`, options(['127.0.0.1/32']))).toEqual({
      kind: 'refused',
      reason: 'not_listed',
    });
    expect(outside.connections).toBe(0);
  });

  it('a name that resolves to a listed address and then to a refused one: the second attempt is refused, nothing reaches the refused address', async () => {
    const allowed = await receiver('127.0.0.1');
    // The same port on the refused address, so only the address decides where a connection would land.
    const rebound = await startReceiver('127.0.0.3', answerStatus(204), allowed.port);
    receivers.push(rebound);
    const sendOptions = options(['127.0.0.1/32', 'rebind.test']);
    const url = `http://rebind.test:${allowed.port}/`;
    await dns.setHosts({ 'rebind.test': ['127.0.0.1'] });
    expect(await send(url, sendOptions)).toEqual({ kind: 'answered', status: 204 });
    await dns.setHosts({ 'rebind.test': ['127.0.0.3'] });
    expect(await send(url, sendOptions)).toEqual({ kind: 'refused', reason: 'not_listed' });
    expect(lookups).toEqual(['rebind.test', 'rebind.test']);
    expect(allowed.requests).toHaveLength(1);
    expect(rebound.connections).toBe(0);
  });

  it('does not follow a redirect, even to a listed address', async () => {
    const elsewhere = await receiver('127.0.0.1');
    const redirecting = await startReceiver(
      '127.0.0.1',
      answerStatus(307, { location: `http://127.0.0.1:${elsewhere.port}/` }),
    );
    receivers.push(redirecting);
    expect(await send(`http://127.0.0.1:${redirecting.port}/`, options(['127.0.0.1/32']))).toEqual({
      kind: 'answered',
      status: 307,
    });
    expect(elsewhere.connections).toBe(0);
  });

  it('requires https unless the destination is listed for plain http', async () => {
    const target = await receiver('127.0.0.1');
    const judge = compileDestinations({ allowedDestinations: ['127.0.0.1/32'], allowHttp: [] });
    expect(await send(`http://127.0.0.1:${target.port}/`, options([], { judge }))).toEqual({
      kind: 'refused',
      reason: 'http_not_allowed',
    });
    expect(target.connections).toBe(0);
  });

  it('reads at most maxResponseBytes of an answer', async () => {
    const endless = await startReceiver('127.0.0.1', (_request, response) => {
      response.writeHead(200);
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const pump = () => {
        while (response.write(chunk)) {
          /* until the socket pushes back */
        }
        response.once('drain', pump);
      };
      pump();
    });
    receivers.push(endless);
    expect(
      await send(
        `http://127.0.0.1:${endless.port}/`,
        options(['127.0.0.1/32'], { maxResponseBytes: 64 * 1024 }),
      ),
    ).toEqual({ kind: 'answered', status: 200 });
  });

  it('gives up on a receiver that never answers within timeoutMs', async () => {
    const silent = await startReceiver('127.0.0.1', () => undefined);
    receivers.push(silent);
    expect(
      await send(`http://127.0.0.1:${silent.port}/`, options(['127.0.0.1/32'], { timeoutMs: 300 })),
    ).toEqual({
      kind: 'failed',
      reason: 'timeout',
    });
    expect(silent.requests).toHaveLength(1);
  });

  it('reports a refused connection as a failure', async () => {
    const closed = await receiver('127.0.0.1');
    await closed.close();
    expect(await send(`http://127.0.0.1:${closed.port}/`, options(['127.0.0.1/32']))).toEqual({
      kind: 'failed',
      reason: 'connection',
    });
  });
});
