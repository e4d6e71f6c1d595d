// Graceful shutdown, as seen by clients: once close() begins, requests already in flight finish and
// their connections are told to close; a request that still arrives on a kept-alive connection gets
// 503 shutting_down in the envelope (Fastify's own 503 would not be), so clients retry elsewhere.
import type { FastifyInstance } from 'fastify';
import type { Socket } from 'node:net';
import { gatewayError } from '../errors/registry.ts';

export function installDraining(app: FastifyInstance): void {
  let draining = false;
  // Closing the server closes its idle kept-alive connections, but not one that has not sent a byte
  // yet: a client's unused pre-opened connection would hold the drain until its deadline (25 s in
  // src/main.ts). Such a connection carries no request, so it is closed at once.
  const connections = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  app.addHook('preClose', (done) => {
    draining = true;
    for (const socket of connections) if (socket.bytesRead === 0) socket.destroy();
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
