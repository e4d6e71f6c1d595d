// Graceful shutdown, as a load balancer in front sees it (docs/reliability.md, "Rolling restart behind a
// load balancer"): once close() begins, a request that arrives on a connection already open is served
// like any other, and the listener closes (new connections are refused, which a balancer retries
// elsewhere) as soon as no connection waits in the kernel's accept queue: closing a listening socket
// resets each connection the kernel has completed and the process has not accepted yet, and a balancer
// that already sent a request on one answers its client 502 (it cannot retry a POST it sent). From then
// on answers carry `Connection: close`, so that each connection ends cleanly after its request. Requests
// in flight finish and close their connections the same way. Only a connection that stays idle is closed
// by the gateway, and only once it has been idle for a grace: a balancer may already have sent a request
// on a kept-alive connection that Node has not read yet, and a POST lost that way cannot be retried by
// it (it answers the client 502).
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
import { connectionsAwaitingAccept } from './accept-queue.ts';

// How long a connection must have been idle (since it opened or last answered, and since the drain began)
// before the drain closes it. A balancer reuses its busiest connections first, so one idle this long is
// not about to carry a request; and Node reads a new socket only in a later turn of the event loop (later
// still when the loop lags), so a request may already be on its way on a connection that looks idle.
// Counted from the drain's start too: a balancer that still routes to the replica takes its pooled
// connections at the moment of the signal, long-idle ones included (a burst needs them all), and each
// such request is served with Connection: close; closing them at once lost those requests.
const IDLE_CONNECTION_GRACE_MS = 1_000;

// While connections wait to be accepted, how soon to look again (a poll phase accepts them meanwhile),
// and for how long at most: Fastify gives a close hook 10 s (its pluginTimeout) before it fails close().
const ACCEPT_QUEUE_RECHECK_MS = 1;
const ACCEPT_QUEUE_WAIT_MS = 5_000;

interface ConnectionState {
  requestsInFlight: number;
  idleSinceMs: number;
  /** Bytes read when the connection last became idle: more since means a request is arriving. */
  bytesReadWhenIdle: number;
  closeTimer: NodeJS.Timeout | undefined;
}

/**
 * Makes the kernel complete no more connections on the server's listening socket: listen() again with a
 * backlog of 0 (Linux then drops a SYN while one connection waits). Node has no public call for it; its
 * handle's listen() does exactly this on a listening socket, and where it is missing nothing changes.
 */
function stopCompletingConnections(server: Server): void {
  const handle = (server as unknown as { _handle?: { listen?: (backlog: number) => number } })._handle;
  handle?.listen?.(0);
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
    // First the listen backlog shrinks to nothing, so that the kernel completes no new connection (it
    // drops their SYNs; the client's retransmission, a second later, finds the listener closed and is
    // refused, which a balancer retries elsewhere), while those already queued are accepted and served.
    // The listener closes once no connection waits in the accept queue, checked right after each accept
    // and in the check phase after each poll phase; where the queue cannot be read, at once; when it
    // never empties, after ACCEPT_QUEUE_WAIT_MS.
    stopCompletingConnections(server);
    const port = (server.address() as AddressInfo | null)?.port;
    const giveUpAtMs = performance.now() + ACCEPT_QUEUE_WAIT_MS;
    let listenerClosed = false;
    const closeListenerIfNoneWaiting = (force: boolean): boolean => {
      if (listenerClosed) return true;
      const waiting = port === undefined ? undefined : connectionsAwaitingAccept(port);
      if (!force && waiting !== undefined && waiting > 0) return false;
      listenerClosed = true;
      onListenerClosed();
      server.off('connection', onAccepted);
      // The listening socket closes now, in this very turn; Fastify's close() that follows finds it
      // closed and waits for the connections as usual.
      server.close();
      done();
      return true;
    };
    // Right after an accept is when the queue is most likely empty, and nothing runs in between.
    const onAccepted = () => {
      closeListenerIfNoneWaiting(false);
    };
    server.on('connection', onAccepted);
    const recheck = () => {
      if (closeListenerIfNoneWaiting(performance.now() >= giveUpAtMs)) return;
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
    // accept queue to empty, a closed connection would only make the balancer open a new one, which could
    // complete just before the close and be reset by it.
    let closing = false;
    app.decorate(
      'cutConnections',
      closeIdleConnectionsGracefully(app, () => {
        closing = true;
      }),
    );
    app.addHook('onSend', function closeConnectionAfterResponse(_request, reply, payload, next) {
      if (closing) reply.header('connection', 'close');
      next(null, payload);
    });
    done();
  },
  { name: 'gengate-draining', fastify: '5.x' },
);
