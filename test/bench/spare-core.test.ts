// `npm run bench -- --spare-core` measures a replica whose collector may use a core beside its event loop's
// (docs/decisions/0077-the-collector-on-a-spare-core.md). The comparison means something only if the
// option moves the helper threads and leaves the main thread alone on the proxy core: a main thread let
// onto the load core would compete with wrk, and helpers left on the proxy core would measure nothing new.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import {
  LOAD_CORE,
  PROXY_CORE,
  pinningAvailable,
  spareCoreForHelpers,
  spawnPinned,
  type BenchProcess,
} from '../../bench/processes.ts';
import { makeTempFolder } from '../support/temp-folders.ts';
import { waitFor } from '../support/wait-for.ts';

const CPUS_ALLOWED = /^Cpus_allowed_list:\s+(\S+)$/m;

function coresOfEachThread(pid: number): Map<string, string> {
  const cores = new Map<string, string>();
  for (const thread of readdirSync(`/proc/${pid}/task`)) {
    const status = readFileSync(`/proc/${pid}/task/${thread}/status`, 'utf8');
    cores.set(thread, CPUS_ALLOWED.exec(status)?.[1] ?? '?');
  }
  return cores;
}

let child: BenchProcess | undefined;
afterEach(async () => {
  await child?.stop();
});

test('the helper threads may run on both cores, the main thread keeps the proxy core alone', async () => {
  // Node starts its threads in stages before it runs the script: once the script has written its line,
  // every thread it starts when idle exists, and none is made after the option has run.
  const stdoutFile = join(await makeTempFolder('spare-core-'), 'stdout');
  child = spawnPinned(
    'idle',
    PROXY_CORE,
    process.execPath,
    ['-e', 'console.log("running"); setInterval(() => {}, 1000)'],
    { stdoutFile },
  );
  const pid = child.pid;
  await waitFor('the script to run', () => existsSync(stdoutFile) && readFileSync(stdoutFile, 'utf8') !== '');
  const before = coresOfEachThread(pid);
  expect(before.size).toBeGreaterThan(1);

  spareCoreForHelpers(child);

  const after = coresOfEachThread(pid);
  if (!pinningAvailable()) {
    // Not pinned to begin with (no taskset or one core): the option changes nothing.
    expect(after).toEqual(before);
    return;
  }
  expect(before.get(String(pid))).toBe(String(PROXY_CORE));
  expect(after.get(String(pid))).toBe(String(PROXY_CORE));
  const helpers = [...after].filter(([thread]) => thread !== String(pid));
  expect(helpers.length).toBeGreaterThan(0);
  for (const [, cores] of helpers) expect(cores).toBe(`${LOAD_CORE}-${PROXY_CORE}`);
});
