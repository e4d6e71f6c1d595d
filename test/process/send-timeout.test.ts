// Bounded by construction (docs/deploy.md#memory-and-connection-bounds): a client that never reads its answer cannot pin it in
// memory: once the answer is written, it must leave within server.sendTimeoutMs or the connection is cut
// and counted (gengate_send_timeouts_total). Against the real process, with an upstream whose answer
// (16 MiB) is far larger than what the sockets between them buffer.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { oneTenantConfig, startGatewayProcess, writeTempConfig } from '../support/gateway-process.ts';
import { CANARY_UPSTREAM_TOKENS, canaryTenantKey } from '../support/secret-canary.ts';
import { waitFor } from '../support/wait-for.ts';

const ANSWER = JSON.stringify({
  status: 200,
  data: { requestId: 'x', padding: 'p'.repeat(16 * 1024 * 1024) },
});
let upstream: Server;
let upstreamUrl: string;
beforeAll(async () => {
  upstream = createServer((request, response) => {
    request.resume();
    request.once('end', () => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(ANSWER);
    });
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as { port: number }).port}`;
});
afterAll(async () => {
  upstream.closeAllConnections();
  upstream.close();
  await once(upstream, 'close');
});

test('an answer the client never reads is cut after server.sendTimeoutMs, and counted', async () => {
  const key = canaryTenantKey();
  const path = await writeTempConfig(
    oneTenantConfig({ upstreamUrl, keys: [key], server: 'sendTimeoutMs: 1000' }),
  );
  const gateway = await startGatewayProcess(path, { SHARED_TOKEN: CANARY_UPSTREAM_TOKENS.shared });
  try {
    const { hostname, port } = new URL(gateway.gatewayUrl);
    const socket = connect(Number(port), hostname);
    socket.on('error', () => {});
    await once(socket, 'connect');
    // Paused: the answer piles up in the kernel's buffers and then in the gateway's.
    socket.pause();
    const closed = once(socket, 'close');
    socket.write(
      [
        'POST /v1/images/generations HTTP/1.1',
        `Host: ${hostname}:${port}`,
        `Authorization: Bearer ${key.key}`,
        'Content-Type: application/json',
        'Content-Length: 2',
        '',
        '{}',
      ].join('\r\n'),
    );
    await waitFor('the cut counted', async () => {
      const text = await (await fetch(`${gateway.adminUrl}/metrics`)).text();
      return text.includes('gengate_send_timeouts_total 1');
    });
    // What had reached this side is read; then the connection ends, the rest of the answer never sent.
    let received = 0;
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    socket.resume();
    await closed;
    expect(received).toBeLessThan(ANSWER.length);
  } finally {
    gateway.signal('SIGTERM');
    expect(await gateway.exited).toBe(0);
  }
}, 30_000);
