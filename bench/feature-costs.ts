// `node bench/feature-costs.ts [--rounds N] [--duration S] [--rate R]`: what each of gengate's features
// costs a request in CPU. gengate runs with every feature on (as `npm run bench` runs it), then with the
// features of the ladder (bench/gengate.ts, FEATURE_LADDER) removed one after the other, down to the
// in-memory store with no log line; the floor (bench/fastify-forward.ts) ends the ladder. The difference
// between two neighbouring steps is the removed feature's CPU per request, and the last step's excess over
// the floor is what every request pays whatever is configured: keys, validation, the fingerprint,
// ownership, metrics. Each step runs in a fresh process with a fresh Redis (the jobs of one step must not
// be followed during the next), at full load or at a fixed rate, in rounds whose order alternates so that
// the machine's drift does not fall on one end of the ladder. Run `npm run build` first: gengate runs
// compiled, as deployed.
//
// A second ladder climbs from the floor to the least a gateway keeping the contract does per create on
// the same stack (bench/least-gateway.ts): the key, the body judged by the schema and the metrics, then a
// log line, then one Redis script call. Its top is a lower bound on what any design of gengate on this
// stack costs; gengate's excess over it is what gengate's own design costs. The bare @fastify/http-proxy,
// which the throughput target is set against, is measured in the same rounds. See docs/performance.md.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  startBareProxy,
  startFastifyForward,
  startLeastGateway,
  startStaticUpstream,
  type LeastWork,
} from './baselines.ts';
import { featureSteps, startGengate, type BenchFeatures } from './gengate.ts';
import { measure, median, type Target } from './measure.ts';
import {
  DEFAULT_CONNECTIONS,
  DEFAULT_DURATION_SECONDS,
  DEFAULT_ROUNDS,
  DEFAULT_WARMUP_SECONDS,
  FIXED_RATE_CONNECTIONS,
  wholeNumber,
} from './options.ts';
import type { BenchProcess } from './processes.ts';
import { startRedis } from './redis.ts';
import { fixed, formatTable } from './report.ts';
import { LEAST_GATEWAY_KEY, SUBMISSION_BODY } from './request-body.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string' },
    duration: { type: 'string' },
    rate: { type: 'string' },
  },
  strict: true,
});
const USAGE = 'usage: node bench/feature-costs.ts [--rounds N] [--duration S] [--rate R]';
const rounds = Math.max(1, wholeNumber('rounds', values.rounds, DEFAULT_ROUNDS, USAGE));
const durationSeconds = Math.max(
  1,
  wholeNumber('duration', values.duration, DEFAULT_DURATION_SECONDS, USAGE),
);
const rate = values.rate === undefined ? undefined : Math.max(1, wholeNumber('rate', values.rate, 0, USAGE));

const print = (text = ''): void => {
  process.stdout.write(`${text}\n`);
};

type Step = { label: string } & (
  | { kind: 'gengate'; features: BenchFeatures }
  | { kind: 'floor' }
  | { kind: 'bare-proxy' }
  | { kind: 'least'; work: Omit<LeastWork, 'redisUrl'> & { redis: boolean } }
);

const FLOOR: Step = { label: 'floor (Fastify + undici)', kind: 'floor' };
/** gengate's ladder, down to the floor: each step removes one feature. */
const GENGATE_LADDER: Step[] = [
  ...featureSteps().map(({ removed, features }): Step => ({
    label: removed === undefined ? 'every feature' : `− ${removed}`,
    kind: 'gengate',
    features,
  })),
  FLOOR,
];
/** The least gateway's ladder, up from the floor: each step adds the least work the contract asks for. */
const LEAST_LADDER: Step[] = [
  FLOOR,
  {
    label: '+ the key, the body by the schema, metrics',
    kind: 'least',
    work: { checks: true, log: false, redis: false },
  },
  { label: '+ a log line', kind: 'least', work: { checks: true, log: true, redis: false } },
  { label: '+ one Redis script call', kind: 'least', work: { checks: true, log: true, redis: true } },
];
/** The proxy the throughput target is set against, measured in the same rounds for the least gateway. */
const BARE_PROXY: Step = { label: 'bare @fastify/http-proxy', kind: 'bare-proxy' };
const STEPS: Step[] = [...GENGATE_LADDER, ...LEAST_LADDER.slice(1), BARE_PROXY];

/** The step's target, started with whatever it needs, and everything started for it. */
async function startStep(step: Step, workDir: string, upstreamUrl: string) {
  const started: BenchProcess[] = [];
  const targetOn = (port: number, process: BenchProcess, authorization?: string): Target => ({
    id: step.kind,
    label: step.label,
    url: `http://127.0.0.1:${port}`,
    pid: process.pid,
    ...(authorization === undefined ? {} : { authorization }),
  });
  if (step.kind === 'floor') {
    const floor = await startFastifyForward(upstreamUrl);
    started.push(floor.process);
    return { target: targetOn(floor.port, floor.process), started };
  }
  if (step.kind === 'bare-proxy') {
    const bare = await startBareProxy(upstreamUrl);
    started.push(bare.process);
    return { target: targetOn(bare.port, bare.process), started };
  }
  if (step.kind === 'least') {
    const redis = step.work.redis ? await startRedis() : undefined;
    if (redis !== undefined) started.push(redis.process);
    const least = await startLeastGateway(
      upstreamUrl,
      { ...step.work, redisUrl: redis?.url },
      join(workDir, 'least-gateway.log'),
    );
    started.push(least.process);
    return { target: targetOn(least.port, least.process, `Bearer ${LEAST_GATEWAY_KEY}`), started };
  }
  // A fresh Redis (or none): no step follows or delivers the jobs of another.
  const redis = step.features.redisStore ? await startRedis() : undefined;
  if (redis !== undefined) started.push(redis.process);
  const gengate = await startGengate({
    workDir,
    upstreamUrl,
    redisUrl: redis?.url ?? 'redis://127.0.0.1:1/0',
    features: step.features,
  });
  started.push(gengate.process);
  return { target: targetOn(gengate.port, gengate.process, gengate.authorization), started };
}

async function measureStep(step: Step, workDir: string, upstreamUrl: string, bodyFile: string) {
  const { target, started } = await startStep(step, workDir, upstreamUrl);
  try {
    const load = {
      bodyFile,
      connections: rate === undefined ? DEFAULT_CONNECTIONS : FIXED_RATE_CONNECTIONS,
      ...(rate === undefined ? {} : { ratePerSecond: rate }),
    };
    await measure(target, { ...load, durationSeconds: DEFAULT_WARMUP_SECONDS });
    const result = await measure(target, { ...load, durationSeconds });
    if (result.failures > 0) throw new Error(`${step.label}: ${result.failures} requests failed`);
    return result;
  } finally {
    for (const child of started.reverse()) await child.stop();
  }
}

const workDir = mkdtempSync(join(tmpdir(), 'gengate-feature-costs-'));
let upstream: BenchProcess | undefined;
try {
  const bodyFile = join(workDir, 'request.json');
  writeFileSync(bodyFile, SUBMISSION_BODY);
  const staticUpstream = await startStaticUpstream();
  upstream = staticUpstream.process;
  const upstreamUrl = `http://127.0.0.1:${staticUpstream.port}`;
  print(
    `CPU per request ${rate === undefined ? 'at full load' : `at ${rate} req/s`}, ${durationSeconds} s per ` +
      `step, ${rounds} rounds`,
  );
  const cpu = STEPS.map(() => [] as number[]);
  const throughput = STEPS.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    const order = STEPS.map((_step, index) => index);
    if (round % 2 === 1) order.reverse();
    for (const index of order) {
      const step = STEPS[index]!;
      const result = await measureStep(step, workDir, upstreamUrl, bodyFile);
      cpu[index]!.push(result.cpuMicrosecondsPerRequest);
      throughput[index]!.push(result.requestsPerSecond);
      print(
        `round ${round + 1}: ${step.label}: ${fixed(result.cpuMicrosecondsPerRequest, 1)} µs/request, ` +
          `${fixed(result.requestsPerSecond, 0)} req/s`,
      );
    }
  }
  const floorIndex = STEPS.indexOf(FLOOR);
  const floor = median(cpu[floorIndex]!);
  // A step's difference is taken within each round, between neighbours of its ladder measured one after
  // the other, and its median over the rounds kept: the machine's drift from round to round cancels out.
  const ladderTable = (ladder: readonly Step[], differenceHeading: string, sign: 1 | -1) => {
    const rows = ladder.map((step, position) => {
      const perRound = cpu[STEPS.indexOf(step)]!;
      const before = position === 0 ? undefined : cpu[STEPS.indexOf(ladder[position - 1]!)]!;
      const differences =
        before === undefined ? [] : perRound.map((value, round) => sign * (value - before[round]!));
      return [
        step.label,
        fixed(median(throughput[STEPS.indexOf(step)]!), 0),
        fixed(median(perRound), 1),
        perRound.map((value) => fixed(value, 1)).join(' / '),
        differences.length === 0 ? '' : fixed(median(differences), 1),
        differences.map((value) => fixed(value, 1)).join(' / '),
        fixed(median(perRound) / floor, 2),
      ];
    });
    return formatTable(
      ['configuration', 'req/s', 'CPU µs/request', 'by round', differenceHeading, 'by round', '× floor'],
      rows,
    );
  };
  print();
  print(ladderTable(GENGATE_LADDER, 'saved by the step', -1));
  print(
    '\n"saved by the step": the CPU per request of what the step removes (its feature); on the floor\'s ' +
      'row, what every request pays beyond the floor whatever is configured.',
  );
  print();
  print(
    'The least a gateway keeping the contract does per create, on the same stack (bench/least-gateway.ts):',
  );
  print(ladderTable(LEAST_LADDER, 'added by the step', 1));
  print(
    '\n"added by the step": the CPU per request of the least work the step adds. The last row is a lower ' +
      'bound on any design of gengate on this stack.',
  );
  // Ratios within each round, between targets measured minutes apart at most: steadier than ratios of
  // medians when the machine's speed drifts between rounds.
  const perRound = (values: number[][], over: Step, under: Step) =>
    values[STEPS.indexOf(over)]!.map((value, round) => value / values[STEPS.indexOf(under)]![round]!);
  const ratioLine = (label: string, ratios: number[]) =>
    `${label}: ${fixed(median(ratios), 2)} (${ratios.map((value) => fixed(value, 2)).join(' / ')} by round)`;
  const everyFeature = GENGATE_LADDER[0]!;
  const leastGateway = LEAST_LADDER.at(-1)!;
  print('\nCPU per request, round by round:');
  print(ratioLine('  the least gateway over the floor', perRound(cpu, leastGateway, FLOOR)));
  print(ratioLine('  gengate (every feature) over the floor', perRound(cpu, everyFeature, FLOOR)));
  print(
    ratioLine('  gengate (every feature) over the least gateway', perRound(cpu, everyFeature, leastGateway)),
  );
  // At a fixed rate every target serves the rate: only full load compares requests per second.
  if (rate === undefined) {
    print(
      `Requests per second over ${BARE_PROXY.label}'s (${fixed(median(throughput[STEPS.indexOf(BARE_PROXY)]!), 0)} req/s), round by round:`,
    );
    print(ratioLine('  the least gateway', perRound(throughput, leastGateway, BARE_PROXY)));
    print(ratioLine('  gengate (every feature)', perRound(throughput, everyFeature, BARE_PROXY)));
  }
} finally {
  await upstream?.stop();
  rmSync(workDir, { recursive: true, force: true });
}
