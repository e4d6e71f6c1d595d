// The drain closes its listener only once no connection waits in the kernel's accept queue
// (src/server/draining.ts); this reads that queue. A listening socket that never accepts (a Python
// one-liner, as Node accepts at once) holds the connections made to it there.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { expect, test } from 'vitest';
import { acceptQueueReader } from '../../src/server/accept-queue.ts';
import { waitFor } from '../support/wait-for.ts';

const NEVER_ACCEPTS = [
  'import socket, sys, time',
  's = socket.socket()',
  "s.bind(('127.0.0.1', 0))",
  's.listen(16)',
  'print(s.getsockname()[1], flush=True)',
  'time.sleep(60)',
].join('\n');

test('counts the connections completed on a port that the listener has not accepted', async () => {
  const listener = spawn('python3', ['-c', NEVER_ACCEPTS], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const [line] = (await once(createInterface({ input: listener.stdout }), 'line')) as [string];
    const queue = acceptQueueReader(Number(line), false);
    try {
      expect(queue.read()).toBe(0);
      const clients = [connect(Number(line), '127.0.0.1'), connect(Number(line), '127.0.0.1')];
      await Promise.all(clients.map((client) => once(client, 'connect')));
      await waitFor('both in the accept queue', () => queue.read() === 2);
      for (const client of clients) client.destroy();
    } finally {
      queue.close();
    }
  } finally {
    listener.kill('SIGKILL');
  }
});
