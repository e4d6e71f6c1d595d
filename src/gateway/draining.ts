// Graceful shutdown, as seen by clients: once close() begins, requests already in flight finish and
// their connections are told to close; a request that still arrives on a kept-alive connection gets
// 503 shutting_down in the envelope (Fastify's own 503 would not be), so clients retry elsewhere.
import type { FastifyInstance } from 'fastify';
import { gatewayError } from '../errors/registry.ts';

export function installDraining(app: FastifyInstance): void {
  let draining = false;
  app.addHook('preClose', async () => {
    draining = true;
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
