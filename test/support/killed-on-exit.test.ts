// killedOnExit itself: a test worker ended by a signal takes the processes it started with it. A gateway
// once outlived by an hour the local run whose worker had been ended so, since 'exit' never fired.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { waitFor } from './wait-for.ts';

const KILLED_ON_EXIT = fileURLToPath(new URL('killed-on-exit.ts', import.meta.url));

// A worker stand-in: starts a long sleep under killedOnExit, prints its pid, and waits to be signalled.
const WORKER = `
import { spawn } from 'node:child_process';
const { killedOnExit } = await import(${JSON.stringify(KILLED_ON_EXIT)});
const child = killedOnExit(spawn('sleep', ['600'], { stdio: 'ignore' }));
process.stdout.write(child.pid + '\\n');
setInterval(() => {}, 1000);
`;

/** Whether `pid` is gone or only a zombie (its parent died before reaping it). */
function isDead(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

test.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)(
  'a worker ended by %s kills its children first, and still ends by that signal',
  async (signal) => {
    const worker = spawn(process.execPath, ['--input-type=module', '-e', WORKER], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const [firstLine] = (await once(worker.stdout, 'data')) as [Buffer];
    const childPid = Number(firstLine.toString().trim());
    expect(Number.isSafeInteger(childPid)).toBe(true);
    expect(isDead(childPid)).toBe(false);

    const exited = once(worker, 'exit');
    worker.kill(signal);
    const [code, endedBy] = (await exited) as [number | null, NodeJS.Signals | null];

    expect({ code, endedBy }).toEqual({ code: null, endedBy: signal });
    await waitFor(`the sleep (pid ${childPid}) to be killed`, () => isDead(childPid));
  },
);
