// Where a target's allocation sampler (bench/heap-sampling.ts) leaves its files, by the target's pid.
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function allocationFiles(pid: number) {
  const directory = join(tmpdir(), `gengate-bench-allocation-${pid}`);
  return {
    directory,
    /** Written once sampling runs. */
    started: join(directory, 'started'),
    /** The profile, renamed into place once complete. */
    profile: join(directory, 'profile.json'),
  };
}
