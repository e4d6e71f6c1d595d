// `node bench/profile.ts [--rate R] [--duration S] [--top N]`: where each µs of gengate's CPU per request
// goes beyond its floor's (bench/fastify-forward.ts). Both run under `--cpu-prof` with the benchmark's V8
// flags and core, one after the other, at full load (50 connections) or at a fixed rate (16 connections),
// and only the samples taken while the load ran are counted, divided by the requests served: µs per
// request by origin (gengate's folders, each dependency, Node's internals, the collector) and by function.
// Run `npm run build` first: gengate runs compiled, as deployed. See docs/performance.md.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startStaticUpstream } from './baselines.ts';
import { cpuTimesInWindow, type CpuProfile } from './cpu-profile.ts';
import { PRODUCTION_NODE_FLAGS, startGengate } from './gengate.ts';
import { measure, type Target } from './measure.ts';
import { DEFAULT_CONNECTIONS } from './options.ts';
import {
  PROXY_CORE,
  cpuSeconds,
  freePort,
  spawnPinned,
  waitForPort,
  type BenchProcess,
} from './processes.ts';
import { startRedis } from './redis.ts';
import { fixed, formatTable } from './report.ts';
import { SUBMISSION_BODY } from './request-body.ts';

const FASTIFY_FORWARD = fileURLToPath(new URL('fastify-forward.ts', import.meta.url));
const START_TIMEOUT_MS = 10_000;
const FIXED_RATE_CONNECTIONS = 16;
const WARMUP_SECONDS = 3;
const MICROSECONDS_PER_SECOND = 1_000_000;
const MILLISECONDS_PER_SECOND = 1_000;

const { values } = parseArgs({
  options: { rate: { type: 'string' }, duration: { type: 'string' }, top: { type: 'string' } },
  strict: true,
});
const rate = values.rate === undefined ? undefined : Number(values.rate);
const durationSeconds = Number(values.duration ?? '10');
const top = Number(values.top ?? '30');

const print = (text = ''): void => {
  process.stdout.write(`${text}\n`);
};

interface Profiled {
  requests: number;
  /** The process's CPU (every thread) during the measured load, per request. */
  cpuMicrosecondsPerRequest: number;
  byOrigin: Map<string, number>;
  byFunction: Map<string, number>;
}

/** Loads a started, profiling target (warm-up, then the measured run), stops it and reads its profile. */
async function profileTarget(target: Target, owner: BenchProcess, profileDir: string, bodyFile: string) {
  const load = {
    bodyFile,
    connections: rate === undefined ? DEFAULT_CONNECTIONS : FIXED_RATE_CONNECTIONS,
    ...(rate === undefined ? {} : { ratePerSecond: rate }),
  };
  await measure(target, { ...load, durationSeconds: WARMUP_SECONDS });
  const cpuAtStart = cpuSeconds(target.pid);
  const loadStart = performance.now();
  const result = await measure(target, { ...load, durationSeconds });
  const loadEnd = performance.now();
  const cpuUsed = cpuSeconds(target.pid) - cpuAtStart;
  await owner.stop();
  const exited = performance.now();
  const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error(`${target.label} wrote no CPU profile`);
  const profile = JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as CpuProfile;
  // The profile ends when the process exits: the load ran from (exit − loadStart) to (exit − loadEnd)
  // before its end.
  const times = cpuTimesInWindow(profile, {
    fromEndMs: exited - loadStart,
    toEndMs: exited - loadEnd,
  });
  print(
    `${target.label}: ${fixed(result.requestsPerSecond, 0)} req/s, p99 ${fixed(result.p99Ms, 3)} ms, ` +
      `CPU ${fixed((cpuUsed * MICROSECONDS_PER_SECOND) / result.requests, 1)} µs/request, ` +
      `${fixed(times.totalMs / MILLISECONDS_PER_SECOND, 1)} s sampled on the main thread`,
  );
  return {
    requests: result.requests,
    cpuMicrosecondsPerRequest: (cpuUsed * MICROSECONDS_PER_SECOND) / result.requests,
    byOrigin: times.byOrigin,
    byFunction: times.byFunction,
  } satisfies Profiled;
}

const perRequest = (microseconds: number | undefined, requests: number) => (microseconds ?? 0) / requests;

function printComparison(floor: Profiled, gengate: Profiled): void {
  const origins = new Set([...floor.byOrigin.keys(), ...gengate.byOrigin.keys()]);
  const rows = [...origins]
    .map((origin) => {
      const floorUs = perRequest(floor.byOrigin.get(origin), floor.requests);
      const gengateUs = perRequest(gengate.byOrigin.get(origin), gengate.requests);
      return { origin, floorUs, gengateUs };
    })
    .sort((a, b) => b.gengateUs - b.floorUs - (a.gengateUs - a.floorUs))
    .slice(0, top);
  print('\nµs per request by origin (main thread samples), largest excess first:');
  print(
    formatTable(
      ['origin', 'floor', 'gengate', 'excess'],
      rows.map((row) => [
        row.origin,
        fixed(row.floorUs, 1),
        fixed(row.gengateUs, 1),
        fixed(row.gengateUs - row.floorUs, 1),
      ]),
    ),
  );
  for (const [label, profiled] of [
    ['gengate', gengate],
    ['floor', floor],
  ] as const) {
    print(`\n${label}: µs per request by function (self time), top ${top}:`);
    print(
      formatTable(
        ['function', 'µs/request'],
        [...profiled.byFunction]
          .sort((a, b) => b[1] - a[1])
          .slice(0, top)
          .map(([name, microseconds]) => [name, fixed(perRequest(microseconds, profiled.requests), 2)]),
      ),
    );
  }
  print(
    `\nCPU per request (every thread): floor ${fixed(floor.cpuMicrosecondsPerRequest, 1)} µs, gengate ` +
      `${fixed(gengate.cpuMicrosecondsPerRequest, 1)} µs, ratio ` +
      fixed(gengate.cpuMicrosecondsPerRequest / floor.cpuMicrosecondsPerRequest, 2),
  );
}

const workDir = mkdtempSync(join(tmpdir(), 'gengate-profile-'));
const started: BenchProcess[] = [];
try {
  const bodyFile = join(workDir, 'request.json');
  writeFileSync(bodyFile, SUBMISSION_BODY);
  const redis = await startRedis();
  started.push(redis.process);
  const upstream = await startStaticUpstream();
  started.push(upstream.process);
  const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
  print(
    `profiling ${rate === undefined ? 'at full load' : `at ${rate} req/s`} for ${durationSeconds} s each`,
  );

  const floorDir = join(workDir, 'floor-profile');
  const floorPort = await freePort();
  const floorProcess = spawnPinned('fastify-forward', PROXY_CORE, process.execPath, [
    ...PRODUCTION_NODE_FLAGS,
    '--cpu-prof',
    `--cpu-prof-dir=${floorDir}`,
    FASTIFY_FORWARD,
    '--port',
    String(floorPort),
    '--upstream',
    upstreamUrl,
  ]);
  started.push(floorProcess);
  await waitForPort(floorProcess, floorPort, START_TIMEOUT_MS);
  const floor = await profileTarget(
    { id: 'floor', label: 'floor', url: `http://127.0.0.1:${floorPort}`, pid: floorProcess.pid },
    floorProcess,
    floorDir,
    bodyFile,
  );

  const gengateDir = join(workDir, 'gengate-profile');
  const gengate = await startGengate({
    workDir,
    upstreamUrl,
    redisUrl: redis.url,
    nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${gengateDir}`],
  });
  started.push(gengate.process);
  const profiled = await profileTarget(
    {
      id: 'gengate',
      label: 'gengate',
      url: `http://127.0.0.1:${gengate.port}`,
      pid: gengate.process.pid,
      authorization: gengate.authorization,
    },
    gengate.process,
    gengateDir,
    bodyFile,
  );
  printComparison(floor, profiled);
} finally {
  await Promise.all(started.map((child) => child.stop()));
  rmSync(workDir, { recursive: true, force: true });
}
