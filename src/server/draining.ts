// Graceful shutdown, as a load balancer in front sees it (docs/reliability.md, "Rolling restart behind a
// load balancer"): once close() begins, a request that arrives on a connection already open is served
// like any other, and the listener closes (new connections are refused, which a balancer retries
// elsewhere) once no connection waits in the kernel's accept queue and none has arrived for a moment:
// closing a listening socket resets each connection the kernel has completed and the process has not
// accepted yet, and a balancer that already sent a request on one answers its client 502 (it cannot
// retry a POST it sent). From then on answers carry `Connection: close`, so that each connection ends
// cleanly after its request. Requests in flight finish and close their connections the same way. Only
// a connection that stays idle is closed by the gateway, and only once it has been idle for a grace: a
// balancer may already have sent a request on a kept-alive connection that Node has not read yet, and a
// POST lost that way cannot be retried by it (it answers the client 502).
//
// Node's server.close() destroys every connection without a request in progress at once (Node 19 and
// later), which is exactly that race; the server's closeIdleConnections, which close() calls, is
// replaced while closing by the graceful version below. Fastify's own 503 on closing is off in
// src/app.ts: nothing arriving during the drain is refused. The gateway and the admin server
// (src/admin/app.ts) both drain this way, so this module belongs to neither.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { acceptQueueReader } from './accept-queue.ts';

// How long a connection must have been idle (since it opened or last answered, and since the drain began)
// before the drain closes it. A balancer reuses its busiest connections first, so one idle this long is
// not about to carry a request; and Node reads a new socket only in a later turn of the event loop (later
// still when the loop lags), so a request may already be on its way on a connection that looks idle.
// Counted from the drain's start too: a balancer that still routes to the replica takes its pooled
// connections at the moment of the signal, long-idle ones included (a burst needs them all), and each
// such request is served with Connection: close; closing them at once lost those requests.
const IDLE_CONNECTION_GRACE_MS = 1_000;

// The listener closes once its accept queue is empty and no connection has arrived for QUIET_MS, counted
// from the signal too. Closing resets each connection the kernel completes in that very instant, and new
// connections come in bursts (a balancer opens several at once when its pool runs short, and a burst of
// requests sent at the signal is one): a quiet spell makes one unlikely. Without a quiet spell within
// QUIET_WAIT_MS, the first empty queue will do; after ACCEPT_QUEUE_WAIT_MS, anything (Fastify gives a
// close hook 10 s, its pluginTimeout, before it fails close()). Between checks, a poll phase accepts.
const QUIET_MS = 100;
const QUIET_WAIT_MS = 1_000;
const ACCEPT_QUEUE_WAIT_MS = 5_000;
const ACCEPT_QUEUE_RECHECK_MS = 1;

interface ConnectionState {
  requestsInFlight: number;
  idleSinceMs: number;
  /** Bytes read when the connection last became idle: more since means a request is arriving. */
  bytesReadWhenIdle: number;
  closeTimer: NodeJS.Timeout | undefined;
}

/**
 * During close(), closes each connection once it has been idle long enough, and no other. Returns the
 * way to cut every connection at once when the drain's deadline has passed, with the number of requests
 * that were still in flight on them.
 */
function closeIdleConnectionsGracefully(app: FastifyInstance, onListenerClosed: () => void): () => number {
  const server: Server = app.server;
  const connections = new Map<Socket, ConnectionState>();
  let closing = false;
  let drainStartedMs = 0;

  function closeOnceIdleLongEnough(socket: Socket, state: ConnectionState): void {
    clearTimeout(state.closeTimer);
    if (state.requestsInFlight > 0) return;
    const idleSinceMs = Math.max(state.idleSinceMs, drainStartedMs);
    const waitMs = Math.max(0, idleSinceMs + IDLE_CONNECTION_GRACE_MS - performance.now());
    state.closeTimer = setTimeout(() => {
      // Timers run before the loop polls its sockets: bytes already in the kernel are read (and a
      // request on them begun) only in the poll phase after this one, which setImmediate follows.
      setImmediate(() => {
        if (state.requestsInFlight > 0 || socket.destroyed) return;
        if (socket.bytesRead > state.bytesReadWhenIdle) {
          // Part of a request has arrived: it gets the full grace again to become one.
          markIdle(socket, state);
          closeOnceIdleLongEnough(socket, state);
          return;
        }
        socket.destroy();
      });
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
    drainStartedMs = performance.now();
    server.closeIdleConnections = () => {
      for (const [socket, state] of connections) closeOnceIdleLongEnough(socket, state);
    };
    // The listening socket's queue is read from the start of /proc/net/tcp, in microseconds, right before
    // it closes: a connection completed between the read and the close is reset. The backlog stays as it
    // is: a smaller one drops SYNs, and drops the ACKs of handshakes begun, leaving clients that believe
    // they are connected, have sent a request, and are reset by the close.
    const address = server.address() as AddressInfo | null;
    const listenQueue =
      address === null ? undefined : acceptQueueReader(address.port, address.family === 'IPv6');
    let lastArrivalMs = drainStartedMs;
    let listenerClosed = false;
    const closeListenerIfNoneWaiting = (): boolean => {
      if (listenerClosed) return true;
      const now = performance.now();
      const drainedMs = now - drainStartedMs;
      if (drainedMs < ACCEPT_QUEUE_WAIT_MS) {
        if (drainedMs < QUIET_WAIT_MS && now - lastArrivalMs < QUIET_MS) return false;
        if ((listenQueue?.read() ?? 0) > 0) return false;
      }
      listenerClosed = true;
      listenQueue?.close();
      onListenerClosed();
      server.off('connection', onAccepted);
      // The listening socket closes now, in this very turn; Fastify's close() that follows finds it
      // closed and waits for the connections as usual.
      server.close();
      done();
      return true;
    };
    // Each arrival restarts the quiet spell; once none is awaited, right after an accept is when the queue
    // is most likely empty, and nothing runs in between.
    const onAccepted = () => {
      lastArrivalMs = performance.now();
      closeListenerIfNoneWaiting();
    };
    server.on('connection', onAccepted);
    const recheck = () => {
      if (closeListenerIfNoneWaiting()) return;
      setTimeout(() => setImmediate(recheck), ACCEPT_QUEUE_RECHECK_MS);
    };
    setImmediate(recheck);
  });

  return () => {
    let requestsCut = 0;
    for (const [socket, state] of connections) {
      requestsCut += state.requestsInFlight;
      socket.destroy();
    }
    return requestsCut;
  };
}

/** The drain of the gateway and of the admin server: every response sent while closing ends its connection. */
export const draining = fp(
  (app, _options, done) => {
    // Answers carry Connection: close once the listener has closed, not before: while it waits for its
    // accept queue to empty and a quiet spell, a closed connection would only make the balancer open a new
    // one, which could complete just as the listener closes and be reset by it. Fastify marks every answer
    // `Connection: close` from the moment close() begins (on the raw response, before any hook runs); that
    // mark is taken off until the listener has closed. (With it, nginx opened a new connection for each
    // request to a draining replica, 160 in its first second, and the listener never saw a quiet spell.)
    let drain: 'none' | 'listening' | 'listenerClosed' = 'none';
    app.addHook('preClose', (hookDone) => {
      drain = 'listening';
      hookDone();
    });
    app.decorate(
      'cutConnections',
      closeIdleConnectionsGracefully(app, () => {
        drain = 'listenerClosed';
      }),
    );
    app.addHook('onSend', function closeConnectionAfterResponse(_request, reply, payload, next) {
      if (drain === 'listenerClosed') reply.header('connection', 'close');
      else if (drain === 'listening') reply.raw.removeHeader('connection');
      next(null, payload);
    });
    done();
  },
  { name: 'gengate-draining', fastify: '5.x' },
);
