// Bytes a Node target allocates per request, from V8's sampling heap profiler (bench/heap-sampling.ts,
// preloaded in it): sampling starts, the load runs, sampling stops, and the profile's estimate of the
// bytes allocated meanwhile is divided by the requests answered. Unlike time, this does not move with
// the VM's speed, so it tells whether a change allocates less; and allocation is what the collector
// pays for.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { allocationFiles } from './allocation-files.ts';
import { runLoad, type LoadSpec } from './load.ts';
import type { Target } from './measure.ts';
import { waitUntil } from './processes.ts';
import { SUBMISSION_PATH } from './request-body.ts';

const SAMPLER_TIMEOUT_MS = 10_000;
const HEAP_SAMPLING = fileURLToPath(new URL('heap-sampling.ts', import.meta.url));
/** Node flags that preload the sampler into a target. */
export const ALLOCATION_SAMPLER_FLAGS = ['--import', HEAP_SAMPLING] as const;

interface SamplingNode {
  selfSize: number;
  children: SamplingNode[];
}

export interface Allocation {
  requests: number;
  bytesPerRequest: number;
}

function totalBytes(node: SamplingNode): number {
  return node.children.reduce((total, child) => total + totalBytes(child), node.selfSize);
}

export async function measureAllocation(
  target: Target,
  spec: Omit<LoadSpec, 'url' | 'authorization'>,
): Promise<Allocation> {
  const files = allocationFiles(target.pid);
  rmSync(files.directory, { recursive: true, force: true });
  try {
    process.kill(target.pid, 'SIGUSR2');
    await waitUntil(
      `${target.label} to start sampling`,
      () => Promise.resolve(existsSync(files.started)),
      SAMPLER_TIMEOUT_MS,
    );
    const load = await runLoad({
      ...spec,
      url: `${target.url}${SUBMISSION_PATH}`,
      ...(target.authorization === undefined ? {} : { authorization: target.authorization }),
    });
    process.kill(target.pid, 'SIGUSR2');
    await waitUntil(
      `${target.label} to write its profile`,
      () => Promise.resolve(existsSync(files.profile)),
      SAMPLER_TIMEOUT_MS,
    );
    if (load.failures > 0 || load.requests === 0) {
      throw new Error(
        `${target.label}: ${load.failures} failures in ${load.requests} requests while sampling`,
      );
    }
    const profile = JSON.parse(readFileSync(files.profile, 'utf8')) as { head: SamplingNode };
    return { requests: load.requests, bytesPerRequest: totalBytes(profile.head) / load.requests };
  } finally {
    rmSync(files.directory, { recursive: true, force: true });
  }
}
