// Loopback ports for test servers: one nothing listens on right now, for a server that must be told its
// port in advance, or a free one a server is started on.
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
  if (address === null || typeof address === 'string') throw new Error('no port assigned');
  return address.port;
}

export interface LoopbackListener {
  port: number;
  /** Stops listening and destroys every open connection (a server that is not listening is fine). */
  closeAll: () => Promise<void>;
}

/** Starts `server` on a free loopback port, keeping track of its connections for closeAll(). */
export async function listenOnLoopback(server: Server): Promise<LoopbackListener> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port assigned');
  return {
    port: address.port,
    async closeAll() {
      const closed = new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
