// `npm run bench -- --spare-core` measures a replica whose collector may use a core beside its event loop's
// (docs/decisions/0077-the-collector-on-a-spare-core.md). The comparison means something only if the
// option moves the helper threads and leaves the main thread alone on the proxy core: a main thread let
// onto the load core would compete with wrk, and helpers left on the proxy core would measure nothing new.
import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, expect, test } from 'vitest';
import {
  LOAD_CORE,
  PROXY_CORE,
  pinningAvailable,
  spareCoreForHelpers,
  spawnPinned,
  type BenchProcess,
} from '../../bench/processes.ts';
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
  child = spawnPinned('idle', PROXY_CORE, process.execPath, ['-e', 'setInterval(() => {}, 1000)']);
  const pid = child.pid;
  // V8 starts its worker threads with the isolate; wait until they exist.
  await waitFor("V8's worker threads", () => coresOfEachThread(pid).size > 1);
  const before = coresOfEachThread(pid);

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
