// The admin port shares the event loop with tenants, so it is bounded (docs/deploy.md#memory-and-connection-bounds): a request
// trickled to it is cut within about a second of its 5 s bound, it holds at most admin.maxConnections
// connections, and /metrics is rendered at most once a second however many scrape it.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterEach, expect, test } from 'vitest';
import { buildAdminApp } from '../../src/admin/app.ts';
import { createReadiness } from '../../src/admin/readiness.ts';
import { createMetrics } from '../../src/observability/metrics.ts';
import { waitFor } from '../support/wait-for.ts';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function startAdmin(maxConnections?: number) {
  const metrics = createMetrics();
  const admin = buildAdminApp({
    logger: pino({ level: 'silent' }),
    metrics,
    readiness: createReadiness(),
    ...(maxConnections === undefined ? {} : { maxConnections }),
  });
  const url = new URL(await admin.listen({ host: '127.0.0.1', port: 0 }));
  close = () => admin.close();
  return { admin, metrics, port: Number(url.port) };
}

function open(port: number): Socket {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  return socket;
}

test('a request trickled to the admin port is cut: 408 and the connection closed', async () => {
  const { port } = await startAdmin();
  const socket = open(port);
  await once(socket, 'connect');
  let answer = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
  const closed = once(socket, 'close');
  const startedAt = performance.now();
  socket.write('GET /metrics HTTP/1.1\r\nHost: admin\r\n');
  // A header line every half second, never the end of the head.
  const trickle = setInterval(() => socket.write('X-Trickle: 1\r\n'), 500);
  try {
    await closed;
  } finally {
    clearInterval(trickle);
  }
  const elapsedMs = performance.now() - startedAt;
  expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  expect(elapsedMs).toBeGreaterThanOrEqual(5_000);
}, 20_000);

test('/metrics is rendered at most once a second: scrapes within it share one rendering', async () => {
  const { admin, metrics } = await startAdmin();
  const shed = (body: string) =>
    body.split('\n').find((line) => line.startsWith('gengate_load_shed_total{reason="rss"}'));
  const firstAt = performance.now();
  const first = (await admin.inject('/metrics')).body;
  metrics.loadShed.inc({ reason: 'rss' });
  const second = (await admin.inject('/metrics')).body;
  const secondWithinTheSecond = performance.now() - firstAt < 1_000;
  expect(shed(first)).toBe('gengate_load_shed_total{reason="rss"} 0');
  // A machine too busy to scrape twice within the second shows the fresh rendering, rightly.
  expect(shed(second)).toBe(`gengate_load_shed_total{reason="rss"} ${secondWithinTheSecond ? 0 : 1}`);
  await waitFor(
    'a fresh rendering',
    async () => shed((await admin.inject('/metrics')).body)?.endsWith(' 1') === true,
  );
});

test('beyond admin.maxConnections new connections are closed at once and counted', async () => {
  const { admin, port } = await startAdmin(2);
  const held = [open(port), open(port)];
  await Promise.all(held.map((socket) => once(socket, 'connect')));
  await waitFor('a third connection closed at once', async () => {
    const extra = open(port);
    await once(extra, 'close');
    const body = (await admin.inject('/metrics')).body;
    return body.includes('gengate_connections_refused_total{server="admin"} 1');
  });
  expect(held.every((socket) => !socket.destroyed)).toBe(true);
  for (const socket of held) socket.destroy();
});

// Regression: the scrapes a flood left waiting for their turn held every window after their clients had
// gone (2 a tenth of a second), so for seconds a real scraper waited behind them, and the fault suite's
// second flood got no answer at all.
test('a scrape whose client went away while it waited gives up its place in the pace', async () => {
  const { admin, port } = await startAdmin();
  const gone = Array.from({ length: 60 }, () => open(port));
  let answered = 0;
  for (const socket of gone) {
    socket.write('GET /metrics HTTP/1.1\r\nHost: admin\r\n\r\n');
    socket.once('data', () => (answered += 1));
  }
  // The first window's scrapes are answered: the others have arrived and wait (2 a window, so 29 more
  // windows, about 3 s, if they kept their places).
  await waitFor('the first window answered', () => answered >= 2);
  const openConnections = promisify(admin.server.getConnections.bind(admin.server));
  await waitFor('every connection accepted', async () => (await openConnections()) === gone.length);
  for (const socket of gone) socket.destroy();
  await waitFor('their connections closed', async () => (await openConnections()) === 0);
  const startedAt = performance.now();
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  await response.text();
  expect(response.status).toBe(200);
  // Kept places would cost about 3 s; a fresh scrape takes a window or two.
  expect(performance.now() - startedAt).toBeLessThan(2_000);
}, 20_000);
