// `npm run bench`: the gateway's benchmark (docs/performance.md). On loopback, one static upstream and the same
// image submission sent straight to it, through a bare @fastify/http-proxy, through the floor of gengate's
// own architecture (Fastify and its upstream client alone), through gengate with every feature on, and
// through nginx when installed, and with --against through another git revision of gengate; throughput
// and latency at a fixed rate, interleaved rounds, medians. Prints tables and writes
// bench/results/<timestamp>.json. See docs/performance.md.
import {
  closeSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { reportJobCosts } from './job-costs.ts';
import { ALLOCATION_SAMPLER_FLAGS, measureAllocation, type Allocation } from './allocation.ts';
import { summariseCpuProfile, type ProfileSummary } from './cpu-profile.ts';
import { buildGengateAt, startGengate, type BenchGengate, type OtherBuild } from './gengate.ts';
import { startBareProxy, startFastifyForward, startNginx, startStaticUpstream } from './baselines.ts';
import { wrkPath } from './load.ts';
import { measure, median, type Measurement, type Target } from './measure.ts';
import { FIXED_RATE_CONNECTIONS, parseBenchOptions, type BenchOptions } from './options.ts';
import { pinningNote, spareCoreForHelpers, type BenchProcess } from './processes.ts';
import { startRedis } from './redis.ts';
import {
  buildComparisonTable,
  checkTargets,
  compareBuilds,
  fixed,
  fixedRateTable,
  formatTable,
  ratiosPerRound,
  summarise,
  throughputTable,
  type TargetSummary,
} from './report.ts';
import { SUBMISSION_BODY, SUBMISSION_PATH, SUBMISSION_RESPONSE } from './request-body.ts';
import { runSoak, type SoakResult } from './soak.ts';
import { countStoreTrips, type StoreTrips } from './store-trips.ts';
import { measureStoreWaits, type StoreWaits } from './store-waits.ts';
import {
  DEFAULT_STALL_BODY_BYTES,
  DEFAULT_STALL_ROUNDS,
  SMOKE_STALL_BODY_BYTES,
  SMOKE_STALL_ROUNDS,
  measureStallBudget,
  stallBudgetSummary,
  stallBudgetTable,
} from './stall-budget.ts';

const RESULTS_DIR = fileURLToPath(new URL('results/', import.meta.url));
const STORE_TRIP_REQUESTS = 1_000;
const SMOKE_STORE_TRIP_REQUESTS = 50;
// Large against the jitter of a loopback request on a busy machine (a few ms at the median), small
// enough to keep the measurement to a few seconds.
const STORE_WAIT_DELAY_MS = 25;
const STORE_WAIT_REQUESTS = 41;
const SMOKE_STORE_WAIT_REQUESTS = 11;
const PROFILE_TOP_FUNCTIONS = 25;
// The Node targets, whose allocations V8 can sample (and the other build of gengate, with --against); a
// few seconds of load give tens of thousands of samples each.
const ALLOCATION_TARGETS = ['bare-proxy', 'fastify-forward', 'gengate'];
const ALLOCATION_SECONDS = 5;
const BYTES_PER_KB = 1_000;

const print = (text = ''): void => {
  process.stdout.write(`${text}\n`);
};
const loadAverage = (): string =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

async function assertAnswersLikeUpstream(target: Target): Promise<void> {
  const response = await fetch(`${target.url}${SUBMISSION_PATH}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(target.authorization === undefined ? {} : { authorization: target.authorization }),
    },
    body: SUBMISSION_BODY,
  });
  const body = await response.text();
  if (response.status !== 200 || body !== SUBMISSION_RESPONSE) {
    throw new Error(`${target.label} answered ${response.status} ${body}, not the upstream's answer`);
  }
  const policy = response.headers.get('gengate-policy');
  if (policy !== null) throw new Error(`${target.label} rewrote the benchmark body: ${policy}`);
}

/** Every target once per round, in an order that rotates so none always runs first or last. */
async function interleavedRounds(
  phase: string,
  targets: readonly Target[],
  options: BenchOptions,
  run: (target: Target) => Promise<Measurement>,
): Promise<Map<string, Measurement[]>> {
  const byTarget = new Map<string, Measurement[]>(targets.map((target) => [target.id, []]));
  for (let round = 0; round < options.rounds; round++) {
    print(`${phase}, round ${round + 1}/${options.rounds} (load average ${loadAverage()})`);
    for (let step = 0; step < targets.length; step++) {
      const target = targets[(round + step) % targets.length]!;
      const result = await run(target);
      byTarget.get(target.id)!.push(result);
      print(
        `  ${target.label.padEnd(22)} ${fixed(result.requestsPerSecond, 0).padStart(7)} req/s  ` +
          `CPU ${fixed(result.cpuMicrosecondsPerRequest, 1)} µs/req  ` +
          `p50 ${fixed(result.p50Ms, 3)}  p99 ${fixed(result.p99Ms, 3)}  p99.9 ${fixed(result.p999Ms, 3)} ms  ` +
          `RSS ${fixed(result.peakRssMb, 1)} MB${result.failures > 0 ? `  FAILURES ${result.failures}` : ''}`,
      );
    }
  }
  return byTarget;
}

function summaries(targets: readonly Target[], results: Map<string, Measurement[]>): TargetSummary[] {
  return targets.map((target) => summarise(target.id, target.label, results.get(target.id) ?? []));
}

async function profileGengate(
  options: BenchOptions,
  context: { workDir: string; upstreamUrl: string; redisUrl: string; bodyFile: string; stamp: string },
  started: BenchProcess[],
): Promise<ProfileSummary> {
  const profileDir = join(context.workDir, 'profile');
  const profiled = await startGengate({
    workDir: context.workDir,
    upstreamUrl: context.upstreamUrl,
    redisUrl: context.redisUrl,
    nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`],
    name: 'gengate-profiled',
  });
  started.push(profiled.process);
  print(`profiling gengate for ${options.durationSeconds} s (load average ${loadAverage()})`);
  await measure(gengateTarget(profiled), {
    bodyFile: context.bodyFile,
    connections: options.connections,
    durationSeconds: options.durationSeconds,
  });
  // The profile is written when the process exits after SIGTERM.
  await profiled.process.stop();
  const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error('gengate wrote no CPU profile');
  const kept = join(RESULTS_DIR, `${context.stamp}-gengate.cpuprofile`);
  copyFileSync(join(profileDir, file), kept);
  print(`CPU profile kept in ${kept}`);
  return summariseCpuProfile(kept, PROFILE_TOP_FUNCTIONS);
}

function gengateTarget(gengate: BenchGengate, build?: OtherBuild): Target {
  return {
    id: build === undefined ? 'gengate' : `gengate@${build.ref}`,
    label: build === undefined ? 'gengate (all features)' : `gengate@${build.ref}`,
    url: `http://127.0.0.1:${gengate.port}`,
    pid: gengate.process.pid,
    authorization: gengate.authorization,
  };
}

const LOG_READ_CHUNK_BYTES = 1 << 20;
const NEWLINE = 0x0a;

// Read in chunks: after a ten-minute soak the log is larger than the longest string V8 can hold.
function averageLogLineBytes(logFile: string): number {
  const descriptor = openSync(logFile, 'r');
  const chunk = Buffer.alloc(LOG_READ_CHUNK_BYTES);
  let bytes = 0;
  let lines = 0;
  try {
    for (let read = readSync(descriptor, chunk); read > 0; read = readSync(descriptor, chunk)) {
      bytes += read;
      for (
        let index = chunk.indexOf(NEWLINE);
        index !== -1 && index < read;
        index = chunk.indexOf(NEWLINE, index + 1)
      ) {
        lines += 1;
      }
    }
  } finally {
    closeSync(descriptor);
  }
  return lines === 0 ? Number.NaN : bytes / lines;
}

function printProfile(profile: ProfileSummary): void {
  print(`\nCPU profile of gengate under load (${fixed(profile.totalMs / 1000, 1)} s sampled), self time:`);
  print(
    formatTable(
      ['function', 'self %'],
      profile.topFunctions.map((row) => [row.name, fixed(row.selfPercent, 1)]),
    ),
  );
  print('\nby origin:');
  print(
    formatTable(
      ['origin', 'self %'],
      profile.byOrigin.map((row) => [row.name, fixed(row.selfPercent, 1)]),
    ),
  );
}

const SOAK_FIGURES = {
  rssMb: { label: 'RSS', unit: 'MB', digits: 1 },
  heapUsedMb: { label: 'heap used', unit: 'MB', digits: 1 },
  openFds: { label: 'open file descriptors', unit: '', digits: 0 },
  eventLoopLagP99Ms: { label: 'event-loop lag p99', unit: 'ms', digits: 2 },
} as const;

function printSoak(soak: SoakResult): void {
  print(
    `\nsoak: ${soak.seconds} s at ${fixed(soak.requestsPerSecond, 0)} req/s, ${soak.failures} failures, ` +
      `${soak.samples.length} samples; the halves after warm-up (medians):`,
  );
  print(
    formatTable(
      ['figure', 'earlier', 'later', 'growth', 'tolerance', 'flat'],
      soak.flatness.map((each) => {
        const { label, unit, digits } = SOAK_FIGURES[each.figure];
        const value = (number: number) => `${fixed(number, digits)}${unit === '' ? '' : ` ${unit}`}`;
        return [
          label,
          value(each.earlier),
          value(each.later),
          value(each.growth),
          value(each.tolerance),
          each.flat ? 'yes' : 'NO',
        ];
      }),
    ),
  );
  print(
    `  RSS slope after warm-up ${fixed(soak.rssSlopeMbPerMinute, 2)} MB/min; flat: ${soak.flat ? 'yes' : 'NO'}`,
  );
}

/** Every process the run measures, started; `started` lists them for the teardown. */
interface BenchTargets {
  redis: Awaited<ReturnType<typeof startRedis>>;
  upstreamUrl: string;
  gengate: BenchGengate;
  otherBuild: OtherBuild | undefined;
  otherTarget: Target | undefined;
  targets: Target[];
}

/** Builds --against's revision, then starts Redis, the upstream, the baselines and gengate (and its twin). */
async function startTargets(
  options: BenchOptions,
  workDir: string,
  started: BenchProcess[],
): Promise<BenchTargets> {
  let otherBuild: OtherBuild | undefined;
  if (options.against !== undefined) {
    print(`building gengate at ${options.against}`);
    otherBuild = buildGengateAt(options.against, workDir);
    print(`gengate@${otherBuild.ref} is commit ${otherBuild.commit}`);
  }
  const redis = await startRedis();
  started.push(redis.process);
  const upstream = await startStaticUpstream();
  started.push(upstream.process);
  const upstreamUrl = `http://127.0.0.1:${upstream.port}`;
  const bare = await startBareProxy(upstreamUrl);
  started.push(bare.process);
  const floor = await startFastifyForward(upstreamUrl);
  started.push(floor.process);
  const gengate = await startGengate({
    workDir,
    upstreamUrl,
    redisUrl: redis.url,
    nodeFlags: ALLOCATION_SAMPLER_FLAGS,
  });
  started.push(gengate.process);
  const nodeProxies = [bare.process, floor.process, gengate.process];
  let otherTarget: Target | undefined;
  if (otherBuild !== undefined) {
    // The same configuration, flags and core: the two builds differ only in their code.
    const other = await startGengate({
      workDir,
      upstreamUrl,
      redisUrl: redis.url,
      nodeFlags: ALLOCATION_SAMPLER_FLAGS,
      main: otherBuild.main,
      configSchema: otherBuild.configSchema,
      name: 'gengate-against',
    });
    started.push(other.process);
    nodeProxies.push(other.process);
    if (other.leftOutOfConfig.length > 0) {
      print(
        `gengate@${otherBuild.ref} runs without what it does not know: ${other.leftOutOfConfig.join(', ')}`,
      );
    }
    otherTarget = gengateTarget(other, otherBuild);
  }
  if (options.spareCore) for (const proxy of nodeProxies) spareCoreForHelpers(proxy);
  const nginx = await startNginx(workDir, upstream.port);
  if (nginx !== undefined) started.push(nginx.process);
  else print('nginx not installed: its row is left out');

  const targets: Target[] = [
    { id: 'direct', label: 'direct (upstream)', url: upstreamUrl, pid: upstream.process.pid },
    {
      id: 'bare-proxy',
      label: 'bare @fastify/http-proxy',
      url: `http://127.0.0.1:${bare.port}`,
      pid: bare.process.pid,
    },
    {
      id: 'fastify-forward',
      label: 'Fastify + undici forward',
      url: `http://127.0.0.1:${floor.port}`,
      pid: floor.process.pid,
    },
    gengateTarget(gengate),
    ...(otherTarget === undefined ? [] : [otherTarget]),
    ...(nginx === undefined
      ? []
      : [{ id: 'nginx', label: 'nginx', url: `http://127.0.0.1:${nginx.port}`, pid: nginx.process.pid }]),
  ];
  for (const target of targets) await assertAnswersLikeUpstream(target);
  return { redis, upstreamUrl, gengate, otherBuild, otherTarget, targets };
}

async function warmUp(targets: readonly Target[], options: BenchOptions, bodyFile: string): Promise<void> {
  if (options.warmupSeconds === 0) return;
  print(`warming up each target for ${options.warmupSeconds} s`);
  for (const target of targets) {
    await measure(target, {
      bodyFile,
      connections: options.connections,
      durationSeconds: options.warmupSeconds,
    });
  }
}

/** Throughput at full load, then latency at a fixed rate: every target in interleaved rounds. */
async function measureLoad(targets: readonly Target[], options: BenchOptions, bodyFile: string) {
  const throughput = summaries(
    targets,
    await interleavedRounds(
      `throughput (${options.connections} connections, ${options.durationSeconds} s)`,
      targets,
      options,
      (target) =>
        measure(target, {
          bodyFile,
          connections: options.connections,
          durationSeconds: options.durationSeconds,
        }),
    ),
  );
  const fixedRate = summaries(
    targets,
    await interleavedRounds(
      `fixed rate (${options.fixedRatePerSecond} req/s, ${options.durationSeconds} s)`,
      targets,
      options,
      (target) =>
        measure(target, {
          bodyFile,
          connections: FIXED_RATE_CONNECTIONS,
          durationSeconds: options.durationSeconds,
          ratePerSecond: options.fixedRatePerSecond,
        }),
    ),
  );
  return { throughput, fixedRate };
}

/** What only gengate is measured for: the soak, allocations, store round trips, the stall budget, a profile. */
async function measureGengate(
  bench: BenchTargets,
  options: BenchOptions,
  context: { workDir: string; bodyFile: string; stamp: string },
  started: BenchProcess[],
) {
  const { gengate, redis } = bench;
  const { workDir, bodyFile } = context;
  const storeTrips: StoreTrips = await countStoreTrips({
    redisPort: redis.port,
    url: `${gengateTarget(gengate).url}${SUBMISSION_PATH}`,
    authorization: gengate.authorization,
    requests: options.smoke ? SMOKE_STORE_TRIP_REQUESTS : STORE_TRIP_REQUESTS,
  });
  const storeWaits: StoreWaits = await measureStoreWaits({
    workDir,
    upstreamUrl: bench.upstreamUrl,
    redisPort: redis.port,
    delayMs: STORE_WAIT_DELAY_MS,
    requests: options.smoke ? SMOKE_STORE_WAIT_REQUESTS : STORE_WAIT_REQUESTS,
  });
  // After the store steps: a ten-minute soak leaves millions of jobs for the tracker to follow, and Redis
  // would not be quiet again for the round trips to be counted. Before the allocation step: the heap
  // sampler's inspector session leaves memory of its own in the target (RSS 185 → 232 MB in a soak that
  // followed it, `npm run bench -- --soak 300`).
  const soak =
    options.soakSeconds > 0
      ? await runSoak({
          pid: gengate.process.pid,
          adminPort: gengate.adminPort,
          seconds: options.soakSeconds,
          sampleSeconds: options.soakSampleSeconds,
          load: {
            url: `${gengateTarget(gengate).url}${SUBMISSION_PATH}`,
            authorization: gengate.authorization,
            bodyFile,
            connections: options.connections,
          },
        })
      : undefined;
  const allocation: Record<string, Allocation> = {};
  for (const target of bench.targets.filter(
    (each) => ALLOCATION_TARGETS.includes(each.id) || each === bench.otherTarget,
  )) {
    allocation[target.id] = await measureAllocation(target, {
      bodyFile,
      connections: options.connections,
      durationSeconds: Math.min(options.durationSeconds, ALLOCATION_SECONDS),
    });
  }
  // In this process: judging a body is synchronous work, timed directly (bench/stall-budget.ts).
  const stallBudget = measureStallBudget(
    options.smoke
      ? { bytes: SMOKE_STALL_BODY_BYTES, rounds: SMOKE_STALL_ROUNDS }
      : { bytes: DEFAULT_STALL_BODY_BYTES, rounds: DEFAULT_STALL_ROUNDS },
  );
  const profile = options.profile
    ? await profileGengate(
        options,
        { workDir, upstreamUrl: bench.upstreamUrl, redisUrl: redis.url, bodyFile, stamp: context.stamp },
        started,
      )
    : undefined;
  return { soak, allocation, storeTrips, storeWaits, stallBudget, profile };
}

type LoadResults = Awaited<ReturnType<typeof measureLoad>>;
type GengateResults = Awaited<ReturnType<typeof measureGengate>>;

const rowOf = (rows: readonly TargetSummary[], id: string) => rows.find((summary) => summary.id === id);

/**
 * gengate's CPU per request over the floor's (Fastify + undici forward): the median of the rounds' ratios,
 * each round's two figures taken minutes apart on the same machine.
 */
const cpuOverFloor = (rows: readonly TargetSummary[]) =>
  median(
    ratiosPerRound(
      rowOf(rows, 'gengate'),
      rowOf(rows, 'fastify-forward'),
      (round) => round.cpuMicrosecondsPerRequest,
    ),
  );

/** gengate against the baselines: throughput and CPU ratios, and the p99 each proxy adds at a fixed rate. */
function ratiosAgainstBaselines({ throughput, fixedRate }: LoadResults) {
  const directP99 = rowOf(fixedRate, 'direct')?.p99Ms ?? Number.NaN;
  const gengateThroughput = rowOf(throughput, 'gengate')!;
  const bareThroughput = rowOf(throughput, 'bare-proxy');
  const gengateOverBarePerRound = ratiosPerRound(
    gengateThroughput,
    bareThroughput,
    (round) => round.requestsPerSecond,
  );
  return {
    gengateOverBarePerRound,
    gengateOverBarePerRoundMedian: median(gengateOverBarePerRound),
    gengateOverBareRequestsPerSecond:
      gengateThroughput.requestsPerSecond / (bareThroughput?.requestsPerSecond ?? Number.NaN),
    gengateOverFloorRequestsPerSecond:
      gengateThroughput.requestsPerSecond /
      (rowOf(throughput, 'fastify-forward')?.requestsPerSecond ?? Number.NaN),
    // Above 1 when gengate spends more CPU on a request than the bare proxy; on a shared VM steadier
    // than the throughput ratio, which it should mirror while both saturate their core.
    gengateOverBareCpuPerRequest:
      gengateThroughput.cpuMicrosecondsPerRequest / (bareThroughput?.cpuMicrosecondsPerRequest ?? Number.NaN),
    gengateOverNginxRequestsPerSecond:
      gengateThroughput.requestsPerSecond / (rowOf(throughput, 'nginx')?.requestsPerSecond ?? Number.NaN),
    addedP99MsAtFixedRate: Object.fromEntries(
      fixedRate
        .filter((summary) => summary.id !== 'direct')
        .map((summary) => [summary.id, summary.p99Ms - directP99]),
    ),
  };
}

/** With --against: this build against the other, round by round. */
function comparisonWithOtherBuild(bench: BenchTargets, load: LoadResults, measured: GengateResults) {
  const { otherBuild, otherTarget } = bench;
  if (otherBuild === undefined || otherTarget === undefined) return undefined;
  return compareBuilds(
    { against: otherBuild.ref, commit: otherBuild.commit },
    {
      throughput: rowOf(load.throughput, 'gengate')!,
      fixedRate: rowOf(load.fixedRate, 'gengate')!,
      allocation: measured.allocation.gengate,
    },
    {
      throughput: rowOf(load.throughput, otherTarget.id)!,
      fixedRate: rowOf(load.fixedRate, otherTarget.id)!,
      allocation: measured.allocation[otherTarget.id],
    },
    rowOf(load.fixedRate, 'direct'),
  );
}

interface BenchResults {
  options: BenchOptions;
  targets: readonly Target[];
  load: LoadResults;
  measured: GengateResults;
  ratios: ReturnType<typeof ratiosAgainstBaselines>;
  comparison: ReturnType<typeof comparisonWithOtherBuild>;
  checks: ReturnType<typeof checkTargets>;
  logLineBytes: number;
}

function printResults(results: BenchResults): void {
  const { options, targets, load, measured, ratios, comparison } = results;
  const { storeTrips, storeWaits, allocation, stallBudget, soak, profile } = measured;
  const gengateThroughput = rowOf(load.throughput, 'gengate')!;
  const bareThroughput = rowOf(load.throughput, 'bare-proxy');
  print(
    `\nthroughput: medians of ${options.rounds} rounds of ${options.durationSeconds} s, ${options.connections} connections`,
  );
  print(throughputTable(load.throughput));
  print(
    `\nfixed rate ${options.fixedRatePerSecond} req/s: medians of ${options.rounds} rounds, ${FIXED_RATE_CONNECTIONS} connections`,
  );
  print(fixedRateTable(load.fixedRate, rowOf(load.fixedRate, 'direct')?.p99Ms ?? Number.NaN));
  print(
    `\ngengate / bare-proxy req/s: ${fixed(ratios.gengateOverBareRequestsPerSecond, 2)}; ` +
      `gengate / Fastify + undici forward req/s: ${fixed(ratios.gengateOverFloorRequestsPerSecond, 2)}; ` +
      `gengate / nginx req/s: ${fixed(ratios.gengateOverNginxRequestsPerSecond, 2)}`,
  );
  print(
    `gengate / bare-proxy req/s round by round: ` +
      `${ratios.gengateOverBarePerRound.map((ratio) => fixed(ratio, 2)).join(', ')} ` +
      `(median ${fixed(ratios.gengateOverBarePerRoundMedian, 2)})`,
  );
  print(
    `CPU per request, gengate / bare-proxy: ${fixed(ratios.gengateOverBareCpuPerRequest, 2)} ` +
      `(${fixed(gengateThroughput.cpuMicrosecondsPerRequest, 1)} µs against ` +
      `${fixed(bareThroughput?.cpuMicrosecondsPerRequest ?? Number.NaN, 1)} µs)`,
  );
  print(
    `Redis commands per gengate create: ${fixed(storeTrips.roundTripsPerRequest, 2)} over ` +
      `${storeTrips.requests} requests; sent ${JSON.stringify(storeTrips.roundTrips)}, ` +
      `run inside scripts ${JSON.stringify(storeTrips.inScripts)}`,
  );
  print(
    `Store round trips a create waits for: ${fixed(storeWaits.waitedRoundTripsPerRequest, 2)} ` +
      `(median of ${storeWaits.requests} sequential creates ${fixed(storeWaits.medianMs.undelayed, 2)} ms, ` +
      `${fixed(storeWaits.medianMs.delayed, 2)} ms with ${storeWaits.delayMs} ms added each way to Redis)`,
  );
  print(
    `allocated per request (V8 sampling heap profiler): ` +
      targets
        .filter((target) => allocation[target.id] !== undefined)
        .map(
          (target) => `${target.label} ${fixed(allocation[target.id]!.bytesPerRequest / BYTES_PER_KB, 1)} KB`,
        )
        .join(', '),
  );
  print(`gengate log: ${fixed(results.logLineBytes, 0)} bytes per line on average`);
  if (comparison !== undefined) {
    print(
      `\nthis build / gengate@${comparison.against} (${comparison.commit}), round by round: ` +
        'CPU, added p99 and RSS below 1 and req/s above 1 favour this build',
    );
    print(buildComparisonTable(comparison));
    print(
      `bytes allocated per request, this build / the other: ${fixed(comparison.allocatedPerRequest, 3)} ` +
        '(one measurement each, in the allocation step)',
    );
  }
  print(
    `\nstall budget: judging one body of ${stallBudget.bytes} bytes, medians of ${stallBudget.rounds} rounds`,
  );
  print(stallBudgetTable(stallBudget));
  print(stallBudgetSummary(stallBudget));
  if (soak !== undefined) printSoak(soak);
  if (profile !== undefined) printProfile(profile);
  print('\ntargets (docs/performance.md#targets):');
  print(
    formatTable(
      ['target', 'measured', 'met'],
      results.checks.map((check) => [check.target, check.measured, check.met ? 'yes' : 'NO']),
    ),
  );
}

function writeResults(file: string, stamp: string, results: BenchResults): void {
  const { options, load, measured, ratios, comparison } = results;
  const { soak, profile, allocation, storeTrips, storeWaits, stallBudget } = measured;
  writeFileSync(
    file,
    `${JSON.stringify(
      {
        startedAt: stamp,
        node: process.version,
        cpu: cpus()[0]?.model,
        cores: availableParallelism(),
        pinning: pinningNote(options.spareCore),
        loadAverageAtEnd: loadavg(),
        options,
        requestBodyBytes: SUBMISSION_BODY.length,
        throughput: load.throughput,
        fixedRate: {
          ratePerSecond: options.fixedRatePerSecond,
          connections: FIXED_RATE_CONNECTIONS,
          targets: load.fixedRate,
        },
        ratios,
        ...(comparison === undefined ? {} : { against: comparison }),
        allocation,
        storeTrips,
        storeWaits,
        logLineBytes: results.logLineBytes,
        stallBudget,
        checks: results.checks,
        ...(soak === undefined ? {} : { soak }),
        ...(profile === undefined ? {} : { profile }),
      },
      null,
      2,
    )}\n`,
  );
}

async function main(): Promise<void> {
  const options = parseBenchOptions(process.argv.slice(2));
  wrkPath();
  const stamp = new Date().toISOString().replaceAll(':', '-');
  const workDir = mkdtempSync(join(tmpdir(), 'gengate-bench-'));
  const bodyFile = join(workDir, 'request.json');
  writeFileSync(bodyFile, SUBMISSION_BODY);
  mkdirSync(RESULTS_DIR, { recursive: true });
  const started: BenchProcess[] = [];
  try {
    print(
      `gengate benchmark: ${pinningNote(options.spareCore)}; ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'})`,
    );
    print(`Node ${process.version}; load average ${loadAverage()}; body ${SUBMISSION_BODY.length} bytes`);
    const bench = await startTargets(options, workDir, started);
    await warmUp(bench.targets, options, bodyFile);
    const load = await measureLoad(bench.targets, options, bodyFile);
    const measured = await measureGengate(bench, options, { workDir, bodyFile, stamp }, started);
    const ratios = ratiosAgainstBaselines(load);
    const results: BenchResults = {
      options,
      targets: bench.targets,
      load,
      measured,
      ratios,
      comparison: comparisonWithOtherBuild(bench, load, measured),
      checks: checkTargets({
        gengateOverBare: ratios.gengateOverBareRequestsPerSecond,
        cpuOverFloorAtFullLoad: cpuOverFloor(load.throughput),
        cpuOverFloorAtFixedRate: cpuOverFloor(load.fixedRate),
        gengateAddedP99Ms: ratios.addedP99MsAtFixedRate.gengate ?? Number.NaN,
        floorAddedP99Ms: ratios.addedP99MsAtFixedRate['fastify-forward'] ?? Number.NaN,
        gengatePeakRssMb: rowOf(load.throughput, 'gengate')!.peakRssMb,
        gengateAllocatedKbPerRequest:
          (measured.allocation.gengate?.bytesPerRequest ?? Number.NaN) / BYTES_PER_KB,
        storeRoundTripsWaitedPerRequest: measured.storeWaits.waitedRoundTripsPerRequest,
      }),
      logLineBytes: averageLogLineBytes(bench.gengate.logFile),
    };
    printResults(results);
    await reportJobCosts(options.smoke, print);
    const resultFile = join(RESULTS_DIR, `${stamp}.json`);
    writeResults(resultFile, stamp, results);
    print(`\nresults written to ${resultFile}`);
  } finally {
    await Promise.all(started.map((child) => child.stop()));
    rmSync(workDir, { recursive: true, force: true });
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  // The exit handler in processes.ts stops every child.
  process.once(signal, () => process.exit(1));
}
await main();
