// The admin server at shutdown (src/main.ts closes it after the gateway): a connection that never sent a
// request, such as a TCP probe's, is closed once its grace has passed instead of holding the close.
import { once } from 'node:events';
import { connect } from 'node:net';
import pino from 'pino';
import { expect, test } from 'vitest';
import { buildAdminApp } from '../../src/admin/app.ts';
import { createReadiness } from '../../src/admin/readiness.ts';
import { createMetrics } from '../../src/observability/metrics.ts';

test('close() does not wait for a connection that never sent a request', async () => {
  const admin = buildAdminApp({
    logger: pino({ level: 'silent' }),
    metrics: createMetrics(),
    readiness: createReadiness(),
  });
  const { port } = new URL(await admin.listen({ host: '127.0.0.1', port: 0 }));
  // Accepted by the server, not only completed by the kernel: closing the listener resets connections
  // still waiting in its queue.
  const accepted = once(admin.server, 'connection');
  const silent = connect(Number(port), '127.0.0.1');
  await Promise.all([once(silent, 'connect'), accepted]);
  const closedByServer = once(silent, 'close');
  silent.resume();
  // Without it, close() waits for the connection until Node's headers timeout (60 s), past this test's.
  await admin.close();
  await closedByServer;
  expect(silent.bytesRead).toBe(0);
}, 10_000);
