// A throwaway Redis for gengate's store, on the load core.
import {
  LOAD_CORE,
  findExecutable,
  freePort,
  spawnPinned,
  waitForPort,
  type BenchProcess,
} from './processes.ts';

const START_TIMEOUT_MS = 5_000;

export interface BenchRedis {
  process: BenchProcess;
  url: string;
  port: number;
}

export async function startRedis(): Promise<BenchRedis> {
  const executable = findExecutable('redis-server');
  if (executable === undefined) {
    throw new Error(
      'redis-server not found: gengate is measured with its real store (apt-get install -y redis-server)',
    );
  }
  const port = await freePort();
  const redis = spawnPinned('redis', LOAD_CORE, executable, [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
  ]);
  await waitForPort(redis, port, START_TIMEOUT_MS);
  return { process: redis, url: `redis://127.0.0.1:${port}/0`, port };
}
