// Graceful shutdown, as seen by clients: once close() begins, requests already in flight finish and
// their connections are told to close; a request that still arrives on a kept-alive connection gets
// 503 shutting_down in the envelope (Fastify's own 503 would not be), so clients retry elsewhere; a
// connection that never sends a request is closed instead of holding the drain.
import type { FastifyInstance } from 'fastify';
import type { Socket } from 'node:net';
import { gatewayError } from '../errors/registry.ts';

// How long a connection that has not sent a byte may still show its first request once closing begins:
// Node reads a new socket only in a later turn of the event loop (later still when the loop lags), so a
// request may already be on its way.
const SILENT_CONNECTION_GRACE_MS = 1_000;

/**
 * Closing a server closes its idle kept-alive connections, but not one that has not sent a byte yet: a
 * client's spare pooled connection or a TCP health check would hold close() until the drain's deadline
 * (25 s in src/main.ts). Once closing begins, such a connection has a short grace to show a request,
 * which is answered like any other arriving during the drain, and is then closed.
 */
export function closeSilentConnectionsOnClose(app: FastifyInstance): void {
  const connections = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  app.addHook('preClose', (done) => {
    for (const socket of connections) {
      if (socket.bytesRead > 0) continue;
      setTimeout(() => {
        if (socket.bytesRead === 0) socket.destroy();
      }, SILENT_CONNECTION_GRACE_MS).unref();
    }
    done();
  });
}

export function installDraining(app: FastifyInstance): void {
  let draining = false;
  closeSilentConnectionsOnClose(app);
  app.addHook('preClose', (done) => {
    draining = true;
    done();
  });
  app.addHook('onRequest', (_request, _reply, done) => {
    if (!draining) {
      done();
      return;
    }
    done(
      gatewayError('shutting_down', 'this gateway replica is shutting down; retry', {
        headers: { 'retry-after': '1' },
      }),
    );
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (draining) reply.header('connection', 'close');
    done(null, payload);
  });
}
