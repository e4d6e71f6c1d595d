// The store sends the commands of one event-loop turn in one socket write (src/store/redis/
// send-per-turn.ts, the connection's socket corked for the turn), and holds none back for an earlier
// reply. Seen on the connection's socket and from a TCP relay in front of a real Redis that counts what
// arrives and can hold Redis's replies back.
import { createServer, connect, type Server, type AddressInfo, type Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  createRedisConnection,
  waitUntilConnected,
  type RedisConnection,
} from '../../src/store/redis/connection.ts';
import { createCommandSender, type CommandSender } from '../../src/store/redis/send-per-turn.ts';
import {
  startRedisCluster,
  startRedisServer,
  type RedisCluster,
  type RedisServer,
} from '../support/redis-server.ts';
import { freePort } from '../support/free-port.ts';
import { waitFor } from '../support/wait-for.ts';

const COMMANDS_IN_ONE_TURN = 20;
const COMMAND_TIMEOUT_MS = 2_000;
const SET_COMMAND = /\$3\r\nset\r\n/gi;

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * The writes `socket` hands to the kernel while `turn` runs: Node gives a corked socket's chunks to one
 * `_writev` (or `_write`, for one chunk) when it is uncorked, and each chunk of an uncorked socket to a
 * `_write` of its own as it comes. The relay cannot tell the two apart: it reads only once the test
 * yields, when separate writes may already sit in its receive buffer together.
 */
async function kernelWritesDuring(socket: Socket, turn: () => Promise<void>): Promise<number> {
  const write = socket._write.bind(socket);
  const writev = socket._writev?.bind(socket);
  let writes = 0;
  socket._write = (...args) => {
    writes += 1;
    write(...args);
  };
  if (writev !== undefined)
    socket._writev = (...args) => {
      writes += 1;
      writev(...args);
    };
  try {
    await turn();
  } finally {
    // The prototype's methods again.
    Reflect.deleteProperty(socket, '_write');
    Reflect.deleteProperty(socket, '_writev');
  }
  return writes;
}

describe('a single Redis', () => {
  let redis: RedisServer;
  let relay: Server;
  let connection: Redis;
  let sender: CommandSender;
  // Every chunk the relay read from gengate's side, in order.
  const chunksFromClient: Buffer[] = [];
  // While set, Redis's replies wait in the relay.
  let heldReplies: Buffer[] | undefined;
  let toClient: Socket | undefined;

  beforeAll(async () => {
    redis = await startRedisServer();
    relay = createServer((client) => {
      toClient = client;
      const server = connect(redis.port, '127.0.0.1');
      client.on('data', (chunk) => {
        chunksFromClient.push(chunk);
        server.write(chunk);
      });
      server.on('data', (chunk) => {
        if (heldReplies === undefined) client.write(chunk);
        else heldReplies.push(chunk);
      });
      client.on('close', () => server.destroy());
      server.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const { port } = relay.address() as AddressInfo;
    connection = createRedisConnection({
      url: `redis://127.0.0.1:${port}/0`,
      keyPrefix: 'coalesce:',
      commandTimeoutMs: COMMAND_TIMEOUT_MS,
    }) as Redis;
    sender = createCommandSender(connection);
    await waitUntilConnected(connection, 5_000);
  });

  afterAll(async () => {
    connection.disconnect();
    await new Promise((resolve) => relay.close(resolve));
    await redis.stop();
  });

  test('the commands of one turn leave in one write, each answered in order', async () => {
    chunksFromClient.length = 0;
    let replies: Promise<unknown[]> | undefined;
    const writes = await kernelWritesDuring(connection.stream, async () => {
      replies = Promise.all(
        Array.from({ length: COMMANDS_IN_ONE_TURN }, (_, index) =>
          sender.send('incrby', ['counter', index + 1]),
        ),
      );
      // Held in the corked socket until the turn's check phase, then written together.
      expect(connection.stream.writableCorked).toBe(1);
      await nextTurn();
      expect(connection.stream.writableCorked).toBe(0);
    });
    expect(writes).toBe(1);
    expect(await replies).toEqual(
      Array.from({ length: COMMANDS_IN_ONE_TURN }, (_, index) => ((index + 1) * (index + 2)) / 2),
    );
    expect(chunksFromClient).toHaveLength(1);
    expect(chunksFromClient[0]!.toString().match(/\$6\r\nincrby\r\n/gi)).toHaveLength(COMMANDS_IN_ONE_TURN);
  });

  test("batched sends leave in the turn's one write: records before any later command, admissions last", async () => {
    const schedule = sender.turn;
    if (schedule === undefined) throw new Error('a single Redis has a turn schedule');
    chunksFromClient.length = 0;
    const replies: Promise<unknown>[] = [];
    const writes = await kernelWritesDuring(connection.stream, async () => {
      schedule.atTurnEnd(() => replies.push(sender.send('set', ['at-turn-end', '1'])));
      schedule.beforeNextCommand(() => replies.push(sender.send('set', ['before-next', '1'])));
      replies.push(sender.send('set', ['direct', '1']));
      await nextTurn();
    });
    expect(writes).toBe(1);
    expect(await Promise.all(replies)).toEqual(['OK', 'OK', 'OK']);
    expect(chunksFromClient).toHaveLength(1);
    const sent = chunksFromClient[0]!.toString();
    const at = (key: string) => sent.indexOf(`\r\n${key}\r\n`);
    expect(at('coalesce:before-next')).toBeGreaterThan(0);
    expect(at('coalesce:before-next')).toBeLessThan(at('coalesce:direct'));
    expect(at('coalesce:direct')).toBeLessThan(at('coalesce:at-turn-end'));
  });

  test('a turn with batched sends only is written in its check phase too', async () => {
    const schedule = sender.turn;
    if (schedule === undefined) throw new Error('a single Redis has a turn schedule');
    chunksFromClient.length = 0;
    let reply: Promise<unknown> | undefined;
    const writes = await kernelWritesDuring(connection.stream, async () => {
      schedule.atTurnEnd(() => {
        reply = sender.send('set', ['alone', '1']);
        expect(connection.stream.writableCorked).toBe(1);
      });
      await nextTurn();
    });
    expect(writes).toBe(1);
    expect(connection.stream.writableCorked).toBe(0);
    expect(await reply).toBe('OK');
    expect(chunksFromClient).toHaveLength(1);
  });

  // Regression (decision 0076): a pipeline per turn kept every turn's commands, and what their callbacks
  // reach, out of the young generation until the next mark-compact, which made the tail below saturation.
  test('a turn makes no ioredis pipeline', async () => {
    const pipeline = connection.pipeline.bind(connection);
    let pipelines = 0;
    connection.pipeline = (...args: Parameters<Redis['pipeline']>) => {
      pipelines += 1;
      return pipeline(...args);
    };
    try {
      const replies = [sender.send('set', ['plain', '1'])];
      sender.turn?.atTurnEnd(() => {
        replies.push(sender.send('set', ['at-turn-end', '1']));
      });
      await nextTurn();
      expect(await Promise.all(replies)).toEqual(['OK', 'OK']);
      expect(pipelines).toBe(0);
    } finally {
      connection.pipeline = pipeline;
    }
  });

  test('a command sent before the connection is up fails at once and leaves no socket corked', async () => {
    const unreachable = createRedisConnection({
      url: `redis://127.0.0.1:${await freePort()}/0`,
      keyPrefix: 'coalesce:',
      commandTimeoutMs: COMMAND_TIMEOUT_MS,
    });
    unreachable.on('error', () => {
      // Nothing listens there: the connection's errors are expected.
    });
    try {
      const early = createCommandSender(unreachable);
      await expect(early.send('set', ['never', '1'])).rejects.toThrow();
      await nextTurn();
      // ioredis's typings promise a socket; there may be none yet.
      const socket = (unreachable as Redis).stream as Socket | undefined;
      expect(socket?.writableCorked ?? 0).toBe(0);
    } finally {
      unreachable.disconnect();
    }
  });

  test('a command of a later turn is written while the reply to an earlier one is still awaited', async () => {
    chunksFromClient.length = 0;
    heldReplies = [];
    const first = sender.send('set', ['first', '1']);
    await nextTurn();
    const second = sender.send('set', ['second', '2']);
    // Both reach Redis although neither has been answered (a reply-gated batcher would wait here).
    await waitFor('both commands to reach Redis', () => {
      const sent = Buffer.concat(chunksFromClient).toString();
      return (sent.match(SET_COMMAND)?.length ?? 0) === 2;
    });
    const held = heldReplies;
    heldReplies = undefined;
    for (const reply of held) toClient?.write(reply);
    expect(await Promise.all([first, second])).toEqual(['OK', 'OK']);
  });
});

describe('a Redis Cluster', () => {
  let cluster: RedisCluster;
  let connection: RedisConnection;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    connection = createRedisConnection({
      nodes: cluster.nodes,
      keyPrefix: 'coalesce:',
      commandTimeoutMs: COMMAND_TIMEOUT_MS,
    });
    await waitUntilConnected(connection, 10_000);
  }, 30_000);

  afterAll(async () => {
    connection.disconnect();
    await cluster.stop();
  });

  test('a Cluster sends each command at once and batches nothing: its keys spread over slots', async () => {
    const sender = createCommandSender(connection);
    expect(sender.turn).toBeUndefined();
    // Hash tags spread over the slots, so every master gets at least one of these.
    const writes = Promise.all(
      Array.from({ length: 64 }, (_, index) => sender.send('set', [`{key-${index}}`, String(index)])),
    );
    expect(await writes).toEqual(Array.from({ length: 64 }, () => 'OK'));
  });
});
