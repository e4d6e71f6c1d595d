// Preloaded (`node --import`) into the benchmark's Node targets: V8's sampling heap profiler, idle until
// the runner asks. The first SIGUSR2 starts sampling every allocation, including the objects the
// collector has freed since, so the profile adds up to what was allocated rather than what is still
// alive; the next SIGUSR2 stops it and writes the profile. Each step leaves a file the runner waits for
// (bench/allocation.ts). Nothing runs before the first signal.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { allocationFiles } from './allocation-files.ts';

// Bytes between samples, on average; V8 scales each sample, so the sums estimate every byte allocated.
const SAMPLING_INTERVAL_BYTES = 4_096;
// `node bench/profile.ts --allocations --promoted` sets this: the objects the scavenges freed are left
// out, so what remains was promoted to the old generation, died in the young generation during a
// mark-compact (which collects both), or was still alive when sampling stopped.
const PROMOTED_ONLY = process.env.BENCH_ALLOCATIONS_PROMOTED === '1';

const files = allocationFiles(process.pid);
// Signals are handled one at a time: a second SIGUSR2 while sampling starts or stops waits its turn.
let sampling: Session | undefined;
let busy: Promise<void> = Promise.resolve();

async function start(): Promise<void> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: SAMPLING_INTERVAL_BYTES,
    includeObjectsCollectedByMinorGC: !PROMOTED_ONLY,
    includeObjectsCollectedByMajorGC: true,
  });
  sampling = session;
  mkdirSync(files.directory, { recursive: true });
  writeFileSync(files.started, '');
}

async function stop(session: Session): Promise<void> {
  sampling = undefined;
  const { profile } = await session.post('HeapProfiler.stopSampling');
  session.disconnect();
  const partial = `${files.profile}.partial`;
  writeFileSync(partial, JSON.stringify(profile));
  renameSync(partial, files.profile);
}

process.on('SIGUSR2', () => {
  busy = busy
    .then(() => (sampling === undefined ? start() : stop(sampling)))
    .catch((error: unknown) => {
      // The runner times out waiting for the file and reports this target's stderr; the target lives on.
      process.stderr.write(`allocation sampler: ${String(error)}\n`);
    });
});
