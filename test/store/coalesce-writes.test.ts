// The store connection sends the commands of one event-loop turn in one socket write (src/store/
// coalesce-writes.ts), and holds none back for an earlier reply. Seen from a TCP relay in front of a real
// Redis that counts what arrives.
import { createServer, connect, type Server, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createRedisConnection, waitUntilConnected, type RedisConnection } from '../../src/store/redis.ts';
import { startRedisServer, type RedisServer } from '../support/redis-server.ts';

const COMMANDS_IN_ONE_TURN = 20;

let redis: RedisServer;
let relay: Server;
let connection: RedisConnection;
// Every chunk the relay read from gengate's side, in order.
const chunksFromClient: Buffer[] = [];

beforeAll(async () => {
  redis = await startRedisServer();
  relay = createServer((client) => {
    const server = connect(redis.port, '127.0.0.1');
    client.on('data', (chunk) => {
      chunksFromClient.push(chunk);
      server.write(chunk);
    });
    server.pipe(client);
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const { port } = relay.address() as AddressInfo;
  connection = createRedisConnection({
    url: `redis://127.0.0.1:${port}/0`,
    keyPrefix: 'coalesce:',
    commandTimeoutMs: 2_000,
  });
  await waitUntilConnected(connection, 5_000);
});

afterAll(async () => {
  connection.disconnect();
  await new Promise((resolve) => relay.close(resolve));
  await redis.stop();
});

test('the commands of one turn reach Redis in one write, each answered in order', async () => {
  chunksFromClient.length = 0;
  const replies = Promise.all(
    Array.from({ length: COMMANDS_IN_ONE_TURN }, (_, index) => connection.incrby('counter', index + 1)),
  );
  expect(await replies).toEqual(
    Array.from({ length: COMMANDS_IN_ONE_TURN }, (_, index) => ((index + 1) * (index + 2)) / 2),
  );
  expect(chunksFromClient).toHaveLength(1);
  expect(chunksFromClient[0]!.toString().match(/\$6\r\nincrby\r\n/gi)).toHaveLength(COMMANDS_IN_ONE_TURN);
});

test('a command of a later turn is written without waiting for the reply to an earlier one', async () => {
  chunksFromClient.length = 0;
  const first = connection.set('first', '1');
  // The next turn's check phase: the first command's write has left, its reply has not been read yet.
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  const second = connection.set('second', '2');
  expect(await Promise.all([first, second])).toEqual(['OK', 'OK']);
  expect(chunksFromClient.map((chunk) => chunk.toString().match(/\$3\r\nset\r\n/gi)?.length)).toEqual([1, 1]);
});
