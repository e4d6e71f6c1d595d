// The process lifecycle's last resort (src/server/lifecycle.ts): whatever hangs after the drain's
// deadline (a store that never answers its close, a connection that never ends), the process exits 1
// once the margin has passed, logged. Driven through the module with an emitter for `process`, real
// timers and a drain that never ends; the signal, deadline and failure paths run against the real
// process in test/process/lifecycle.test.ts.
import { EventEmitter } from 'node:events';
import pino from 'pino';
import { expect, test } from 'vitest';
import { DRAIN_CLOSE_MARGIN_MS, handleProcessLifecycle } from '../../src/server/lifecycle.ts';

test('a close that hangs past the drain deadline cannot keep the process: exit 1 after the margin, logged', async () => {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info' },
    {
      write: (line: string) => {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      },
    },
  );
  const events = new EventEmitter();
  const exited = Promise.withResolvers<number>();
  let deadlineSeen = false;
  const signalledAt = performance.now();
  handleProcessLifecycle({
    logger,
    drainTimeoutMs: 100,
    drain: (deadline) => {
      deadline.addEventListener('abort', () => (deadlineSeen = true));
      return new Promise(() => {});
    },
    cutInFlight: () => 3,
    exit: (code) => {
      exited.resolve(code);
    },
    events,
  });
  events.emit('SIGTERM');
  expect(await exited.promise).toBe(1);
  // Timers start from libuv's cached loop time, which may be a few ms older than signalledAt.
  expect(performance.now() - signalledAt).toBeGreaterThanOrEqual(100 + DRAIN_CLOSE_MARGIN_MS - 20);
  expect(deadlineSeen).toBe(true);
  expect(lines.map(({ level, msg, aborted, marginMs }) => ({ level, msg, aborted, marginMs }))).toEqual([
    { level: 30, msg: 'draining', aborted: undefined, marginMs: undefined },
    {
      level: 50,
      msg: 'drain deadline passed; requests still in flight cut',
      aborted: 3,
      marginMs: undefined,
    },
    {
      level: 60,
      msg: 'shutdown did not finish after the drain deadline',
      aborted: undefined,
      marginMs: 2_000,
    },
  ]);
});
