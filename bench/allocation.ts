// Bytes a Node target allocates per request, from V8's sampling heap profiler (bench/heap-sampling.ts,
// preloaded in it): sampling starts, the load runs, sampling stops, and the profile's estimate of the
// bytes allocated meanwhile is divided by the requests answered. Unlike time, this does not move with
// the VM's speed, so it tells whether a change allocates less; and allocation is what the collector
// pays for.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { allocationFiles } from './allocation-files.ts';
import { originOf, shortLocation } from './cpu-profile.ts';
import { runLoad, type LoadSpec } from './load.ts';
import type { Target } from './measure.ts';
import { waitUntil } from './processes.ts';
import { SUBMISSION_PATH } from './request-body.ts';

const SAMPLER_TIMEOUT_MS = 10_000;
const HEAP_SAMPLING = fileURLToPath(new URL('heap-sampling.ts', import.meta.url));
/** Node flags that preload the sampler into a target. */
export const ALLOCATION_SAMPLER_FLAGS = ['--import', HEAP_SAMPLING] as const;

export interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}

export interface Allocation {
  requests: number;
  bytesPerRequest: number;
}

export interface AllocationBreakdown {
  /** Bytes by the origin of the allocating frame (cpu-profile.ts originOf). */
  byOrigin: Map<string, number>;
  /** Bytes by the allocating function. */
  byFunction: Map<string, number>;
  /**
   * Bytes by the innermost src/ (or bench/) function on the allocating stack: which of gengate's functions
   * asked for them, through whatever dependency or Node internals did the allocating.
   */
  byCaller: Map<string, number>;
}

const add = (map: Map<string, number>, key: string, bytes: number) =>
  map.set(key, (map.get(key) ?? 0) + bytes);

export function allocationBreakdown(tree: SamplingNode): AllocationBreakdown {
  const breakdown: AllocationBreakdown = { byOrigin: new Map(), byFunction: new Map(), byCaller: new Map() };
  const visit = (node: SamplingNode, caller: string): void => {
    const { functionName, url, lineNumber } = node.callFrame;
    const origin = originOf(url, functionName);
    const name = `${functionName || '(anonymous)'}${shortLocation(url, lineNumber)}`;
    const own = origin.startsWith('src/') || origin.startsWith('bench/') ? name : caller;
    if (node.selfSize > 0) {
      add(breakdown.byOrigin, origin, node.selfSize);
      add(breakdown.byFunction, name, node.selfSize);
      add(breakdown.byCaller, own, node.selfSize);
    }
    for (const child of node.children) visit(child, own);
  };
  visit(tree, '(no src/ frame)');
  return breakdown;
}

function totalBytes(node: SamplingNode): number {
  return node.children.reduce((total, child) => total + totalBytes(child), node.selfSize);
}

export async function measureAllocation(
  target: Target,
  spec: Omit<LoadSpec, 'url' | 'authorization'>,
): Promise<Allocation> {
  const { requests, bytesPerRequest } = await sampleAllocation(target, spec);
  return { requests, bytesPerRequest };
}

/** measureAllocation's figures, with the sampling profile's call tree (for allocationBreakdown). */
export async function sampleAllocation(
  target: Target,
  spec: Omit<LoadSpec, 'url' | 'authorization'>,
): Promise<Allocation & { tree: SamplingNode }> {
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
    return {
      requests: load.requests,
      bytesPerRequest: totalBytes(profile.head) / load.requests,
      tree: profile.head,
    };
  } finally {
    rmSync(files.directory, { recursive: true, force: true });
  }
}
