// `node bench/profile.ts [--rate R] [--duration S] [--top N] [--allocations [--promoted]] [--no-features]
// [--least]`: where each µs of gengate's CPU per request goes beyond its floor's
// (bench/fastify-forward.ts). Both run under `--cpu-prof` with the benchmark's V8 flags and core, one after the other, at full load (50
// connections) or at a fixed rate (16 connections), and only the samples taken while the load ran are
// counted, divided by the requests served: µs per request by origin (gengate's folders, each dependency,
// Node's internals, the collector) and by function. With `--allocations`, the same for the bytes allocated
// per request (V8's sampling heap profiler, bench/allocation.ts), also by the gengate function that asked
// for them; with `--promoted`, only the bytes the scavenges did not free (bench/heap-sampling.ts). With
// `--no-features`, gengate runs with every optional feature removed (the last step of
// bench/feature-costs.ts): the path every request takes whatever is configured. With `--least`, the
// baseline is the least gateway (bench/least-gateway.ts, every option on) instead of the floor: the
// excess is then what gengate's own design costs beyond the least work the contract asks of a create on
// the same stack (docs/decisions/0074-the-least-gateway-as-a-lower-bound.md). Run `npm run build`
// first: gengate runs compiled, as deployed. See docs/performance.md.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  ALLOCATION_SAMPLER_FLAGS,
  allocationBreakdown,
  sampleAllocation,
  type AllocationBreakdown,
} from './allocation.ts';
import { startStaticUpstream } from './baselines.ts';
import { cpuTimesInWindow, type CpuProfile } from './cpu-profile.ts';
import { PRODUCTION_NODE_FLAGS, featureSteps, startGengate } from './gengate.ts';
import { measure, type Target } from './measure.ts';
import { DEFAULT_CONNECTIONS, FIXED_RATE_CONNECTIONS } from './options.ts';
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
import { LEAST_GATEWAY_KEY, SUBMISSION_BODY } from './request-body.ts';

const FASTIFY_FORWARD = fileURLToPath(new URL('fastify-forward.ts', import.meta.url));
const LEAST_GATEWAY = fileURLToPath(new URL('least-gateway.ts', import.meta.url));
const START_TIMEOUT_MS = 10_000;
const WARMUP_SECONDS = 3;
const MICROSECONDS_PER_SECOND = 1_000_000;
const MILLISECONDS_PER_SECOND = 1_000;

const { values } = parseArgs({
  options: {
    rate: { type: 'string' },
    duration: { type: 'string' },
    top: { type: 'string' },
    allocations: { type: 'boolean' },
    'no-features': { type: 'boolean' },
    promoted: { type: 'boolean' },
    least: { type: 'boolean' },
  },
  strict: true,
});
if (values.promoted === true) {
  if (values.allocations !== true) throw new Error('--promoted needs --allocations');
  // Read by the preloaded sampler of every target started below (bench/heap-sampling.ts).
  process.env.BENCH_ALLOCATIONS_PROMOTED = '1';
}
// What gengate is compared with: the floor, or with --least the least gateway.
const BASELINE = values.least === true ? 'least gateway' : 'floor';
const rate = values.rate === undefined ? undefined : Number(values.rate);
const durationSeconds = Number(values.duration ?? '10');
const top = Number(values.top ?? '30');

const print = (text = ''): void => {
  process.stdout.write(`${text}\n`);
};

/** What a target did under the measured load, counted per origin and per function. */
interface Counted {
  requests: number;
  byOrigin: Map<string, number>;
  byFunction: Map<string, number>;
}

interface Profiled extends Counted {
  /** The process's CPU (every thread) during the measured load, per request. */
  cpuMicrosecondsPerRequest: number;
}

const loadFor = (bodyFile: string) => ({
  bodyFile,
  connections: rate === undefined ? DEFAULT_CONNECTIONS : FIXED_RATE_CONNECTIONS,
  ...(rate === undefined ? {} : { ratePerSecond: rate }),
});

interface Started {
  target: Target;
  process: BenchProcess;
  /** Where `--cpu-prof` writes (unused when sampling allocations). */
  profileDir: string;
}

/** Loads a started, profiling target (warm-up, then the measured run), stops it and reads its profile. */
async function profileTarget({ target, process: owner, profileDir }: Started, bodyFile: string) {
  const load = loadFor(bodyFile);
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

const perRequest = (amount: number | undefined, requests: number) => (amount ?? 0) / requests;

/** `unit` per request by origin, the baseline beside gengate, largest excess first; then each one's top functions. */
function printBreakdown(baseline: Counted, gengate: Counted, unit: string, scale: number): void {
  const origins = new Set([...baseline.byOrigin.keys(), ...gengate.byOrigin.keys()]);
  const rows = [...origins]
    .map((origin) => {
      const baselineAmount = perRequest(baseline.byOrigin.get(origin), baseline.requests) / scale;
      const gengateAmount = perRequest(gengate.byOrigin.get(origin), gengate.requests) / scale;
      return { origin, baselineAmount, gengateAmount };
    })
    .sort((a, b) => b.gengateAmount - b.baselineAmount - (a.gengateAmount - a.baselineAmount))
    .slice(0, top);
  print(`\n${unit} per request by origin, largest excess first:`);
  print(
    formatTable(
      ['origin', BASELINE, 'gengate', 'excess'],
      rows.map((row) => [
        row.origin,
        fixed(row.baselineAmount, 1),
        fixed(row.gengateAmount, 1),
        fixed(row.gengateAmount - row.baselineAmount, 1),
      ]),
    ),
  );
  for (const [label, counted] of [
    ['gengate', gengate],
    [BASELINE, baseline],
  ] as const) {
    print(`\n${label}: ${unit} per request by function (self), top ${top}:`);
    printRanked(counted.byFunction, counted.requests, scale);
  }
}

function printRanked(amounts: Map<string, number>, requests: number, scale: number): void {
  print(
    formatTable(
      ['', 'per request'],
      [...amounts]
        .sort((a, b) => b[1] - a[1])
        .slice(0, top)
        .map(([name, amount]) => [name, fixed(perRequest(amount, requests) / scale, 2)]),
    ),
  );
}

function printComparison(baseline: Profiled, gengate: Profiled): void {
  printBreakdown(baseline, gengate, 'µs (main-thread samples)', 1);
  print(
    `\nCPU per request (every thread): ${BASELINE} ${fixed(baseline.cpuMicrosecondsPerRequest, 1)} µs, gengate ` +
      `${fixed(gengate.cpuMicrosecondsPerRequest, 1)} µs, ratio ` +
      fixed(gengate.cpuMicrosecondsPerRequest / baseline.cpuMicrosecondsPerRequest, 2),
  );
}

const BYTES_PER_KB = 1_024;

/** Warms a started target up, samples its allocations under the load, and stops it. */
async function sampleTarget({ target, process: owner }: Started, bodyFile: string) {
  const load = loadFor(bodyFile);
  await measure(target, { ...load, durationSeconds: WARMUP_SECONDS });
  const sampled = await sampleAllocation(target, { ...load, durationSeconds });
  await owner.stop();
  print(`${target.label}: ${fixed(sampled.bytesPerRequest / BYTES_PER_KB, 1)} KB allocated per request`);
  return { requests: sampled.requests, ...allocationBreakdown(sampled.tree) } satisfies Counted &
    AllocationBreakdown;
}

function printAllocations(baseline: Counted, gengate: Counted & AllocationBreakdown): void {
  printBreakdown(baseline, gengate, 'KB allocated', BYTES_PER_KB);
  print(`\ngengate: KB allocated per request by the gengate function on the stack that asked for them:`);
  printRanked(gengate.byCaller, gengate.requests, BYTES_PER_KB);
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

  const profilerFlags = (dir: string) =>
    values.allocations === true ? ALLOCATION_SAMPLER_FLAGS : ['--cpu-prof', `--cpu-prof-dir=${dir}`];
  // Started one after the other, each measured alone: the baseline first, then gengate.
  const startBaseline = async (): Promise<Started> => {
    const profileDir = join(workDir, 'baseline-profile');
    const port = await freePort();
    const [script, work] =
      values.least === true
        ? [LEAST_GATEWAY, ['--checks', '--log', '--redis', redis.url]]
        : [FASTIFY_FORWARD, []];
    const child = spawnPinned(
      BASELINE,
      PROXY_CORE,
      process.execPath,
      [
        ...PRODUCTION_NODE_FLAGS,
        ...profilerFlags(profileDir),
        script,
        '--port',
        String(port),
        '--upstream',
        upstreamUrl,
        ...work,
      ],
      values.least === true ? { stdoutFile: join(workDir, 'least-gateway.log') } : {},
    );
    started.push(child);
    await waitForPort(child, port, START_TIMEOUT_MS);
    const target = {
      id: 'baseline',
      label: BASELINE,
      url: `http://127.0.0.1:${port}`,
      pid: child.pid,
      ...(values.least === true ? { authorization: `Bearer ${LEAST_GATEWAY_KEY}` } : {}),
    };
    return { target, process: child, profileDir };
  };
  const startOurs = async (): Promise<Started> => {
    const profileDir = join(workDir, 'gengate-profile');
    const gengate = await startGengate({
      workDir,
      upstreamUrl,
      redisUrl: redis.url,
      nodeFlags: profilerFlags(profileDir),
      ...(values['no-features'] === true ? { features: featureSteps().at(-1)!.features } : {}),
    });
    started.push(gengate.process);
    const target = {
      id: 'gengate',
      label: 'gengate',
      url: `http://127.0.0.1:${gengate.port}`,
      pid: gengate.process.pid,
      authorization: gengate.authorization,
    };
    return { target, process: gengate.process, profileDir };
  };

  if (values.allocations === true) {
    const baseline = await sampleTarget(await startBaseline(), bodyFile);
    printAllocations(baseline, await sampleTarget(await startOurs(), bodyFile));
  } else {
    const baseline = await profileTarget(await startBaseline(), bodyFile);
    printComparison(baseline, await profileTarget(await startOurs(), bodyFile));
  }
} finally {
  await Promise.all(started.map((child) => child.stop()));
  rmSync(workDir, { recursive: true, force: true });
}
