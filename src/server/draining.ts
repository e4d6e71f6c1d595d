// Graceful shutdown, as a load balancer in front sees it (docs/reliability.md, "Rolling restart behind a load
// balancer"): once close() begins the listener is closed (new connections are refused, which a balancer
// retries elsewhere), and a request that arrives on a connection already open is served like any other,
// answered with `Connection: close` so that the connection ends cleanly after it. Requests in flight finish
// and close their connections the same way. Only a connection that stays idle is closed by the gateway, and
// only once it has been idle for a grace: a balancer may already have sent a request on a kept-alive
// connection that Node has not read yet, and a POST lost that way cannot be retried by it (it answers the
// client 502).
//
// Node's server.close() destroys every connection without a request in progress at once (Node 19 and
// later), which is exactly that race; the server's closeIdleConnections, which close() calls, is
// replaced while closing by the graceful version below. Fastify's own 503 on closing is off in
// src/app.ts: nothing arriving during the drain is refused. The gateway and the admin server
// (src/admin/app.ts) both drain this way, so this module belongs to neither.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

// How long a connection must have been idle (since it opened or last answered) before the drain closes
// it. A balancer reuses its busiest connections first, so one idle this long is not about to carry a
// request; and Node reads a new socket only in a later turn of the event loop (later still when the loop
// lags), so a request may already be on its way on a connection that looks idle.
const IDLE_CONNECTION_GRACE_MS = 1_000;

interface ConnectionState {
  requestsInFlight: number;
  idleSinceMs: number;
  /** Bytes read when the connection last became idle: more since means a request is arriving. */
  bytesReadWhenIdle: number;
  closeTimer: NodeJS.Timeout | undefined;
}

/** During close(), closes each connection once it has been idle long enough, and no other. */
function closeIdleConnectionsGracefully(app: FastifyInstance): void {
  const server: Server = app.server;
  const connections = new Map<Socket, ConnectionState>();
  let closing = false;

  function closeOnceIdleLongEnough(socket: Socket, state: ConnectionState): void {
    clearTimeout(state.closeTimer);
    if (state.requestsInFlight > 0) return;
    const waitMs = Math.max(0, state.idleSinceMs + IDLE_CONNECTION_GRACE_MS - performance.now());
    state.closeTimer = setTimeout(() => {
      if (state.requestsInFlight > 0) return;
      if (socket.bytesRead > state.bytesReadWhenIdle) {
        // Part of a request has arrived: it gets the full grace again to become one.
        markIdle(socket, state);
        closeOnceIdleLongEnough(socket, state);
        return;
      }
      socket.destroy();
    }, waitMs);
  }

  function markIdle(socket: Socket, state: ConnectionState): void {
    state.idleSinceMs = performance.now();
    state.bytesReadWhenIdle = socket.bytesRead;
  }

  server.on('connection', (socket: Socket) => {
    const state: ConnectionState = {
      requestsInFlight: 0,
      idleSinceMs: performance.now(),
      bytesReadWhenIdle: 0,
      closeTimer: undefined,
    };
    connections.set(socket, state);
    socket.once('close', () => {
      clearTimeout(state.closeTimer);
      connections.delete(socket);
    });
  });
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const { socket } = request;
    const state = connections.get(socket);
    if (state === undefined) return;
    state.requestsInFlight += 1;
    clearTimeout(state.closeTimer);
    response.once('close', () => {
      state.requestsInFlight -= 1;
      markIdle(socket, state);
      if (closing && !socket.destroyed) closeOnceIdleLongEnough(socket, state);
    });
  });

  app.addHook('preClose', (done) => {
    closing = true;
    server.closeIdleConnections = () => {
      for (const [socket, state] of connections) closeOnceIdleLongEnough(socket, state);
    };
    done();
  });
}

/** The drain of the gateway and of the admin server: every response sent while closing ends its connection. */
export const draining = fp(
  (app, _options, done) => {
    let closing = false;
    closeIdleConnectionsGracefully(app);
    app.addHook('preClose', (next) => {
      closing = true;
      next();
    });
    app.addHook('onSend', function closeConnectionAfterResponse(_request, reply, payload, next) {
      if (closing) reply.header('connection', 'close');
      next(null, payload);
    });
    done();
  },
  { name: 'gengate-draining', fastify: '5.x' },
);
