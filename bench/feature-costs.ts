// `node bench/feature-costs.ts [--rounds N] [--duration S] [--rate R]`: what each of gengate's features
// costs a request in CPU. gengate runs with every feature on (as `npm run bench` runs it), then with the
// features of the ladder (bench/gengate.ts, FEATURE_LADDER) removed one after the other, down to the
// in-memory store with no log line; the floor (bench/fastify-forward.ts) ends the ladder. The difference
// between two neighbouring steps is the removed feature's CPU per request, and the last step's excess over
// the floor is what every request pays whatever is configured: keys, validation, the fingerprint,
// ownership, metrics. Each step runs in a fresh process with a fresh Redis (the jobs of one step must not
// be followed during the next), at full load or at a fixed rate, in rounds whose order alternates so that
// the machine's drift does not fall on one end of the ladder. Run `npm run build` first: gengate runs
// compiled, as deployed. See docs/performance.md.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startFastifyForward, startStaticUpstream } from './baselines.ts';
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
import { SUBMISSION_BODY } from './request-body.ts';

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

interface Step {
  label: string;
  /** gengate's features at this step; undefined for the floor. */
  features: BenchFeatures | undefined;
}

const STEPS: Step[] = [
  ...featureSteps().map(({ removed, features }) => ({
    label: removed === undefined ? 'every feature' : `− ${removed}`,
    features,
  })),
  { label: 'floor (Fastify + undici)', features: undefined },
];

/** The step's target, started with whatever it needs, and everything started for it. */
async function startStep(step: Step, workDir: string, upstreamUrl: string) {
  const started: BenchProcess[] = [];
  const targetOn = (port: number, process: BenchProcess, authorization?: string): Target => ({
    id: step.features === undefined ? 'floor' : 'gengate',
    label: step.label,
    url: `http://127.0.0.1:${port}`,
    pid: process.pid,
    ...(authorization === undefined ? {} : { authorization }),
  });
  if (step.features === undefined) {
    const floor = await startFastifyForward(upstreamUrl);
    started.push(floor.process);
    return { target: targetOn(floor.port, floor.process), started };
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
  const medians = cpu.map((perRound) => median(perRound));
  const floor = medians.at(-1)!;
  // A step's saving is taken within each round, between neighbours measured one after the other, and
  // its median over the rounds kept: the machine's drift from round to round cancels out of it.
  const savedByStep = cpu.map((perRound, index) => {
    const before = cpu[index - 1];
    return before === undefined ? [] : perRound.map((value, round) => before[round]! - value);
  });
  print();
  print(
    formatTable(
      ['configuration', 'req/s', 'CPU µs/request', 'by round', 'saved by the step', 'by round', '× floor'],
      STEPS.map((step, index) => {
        const saved = savedByStep[index]!;
        return [
          step.label,
          fixed(median(throughput[index]!), 0),
          fixed(medians[index]!, 1),
          cpu[index]!.map((value) => fixed(value, 1)).join(' / '),
          saved.length === 0 ? '' : fixed(median(saved), 1),
          saved.map((value) => fixed(value, 1)).join(' / '),
          fixed(medians[index]! / floor, 2),
        ];
      }),
    ),
  );
  print(
    '\n"saved by the step": the CPU per request of what the step removes (its feature); on the floor\'s ' +
      'row, what every request pays beyond the floor whatever is configured.',
  );
} finally {
  await upstream?.stop();
  rmSync(workDir, { recursive: true, force: true });
}
