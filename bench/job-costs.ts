// What each job costs gengate beyond its requests (docs/performance.md), in CPU of the thread that does
// the work: the job tracker's, to follow N jobs on a real Redis to their end (lease, one poll of the
// simulator, settlement, telling the listeners), and the webhook sender's, to deliver N job ends (queued on
// BullMQ on the same Redis, signed, POSTed to a loopback receiver that answers 204). The simulator and the
// receiver run in a worker thread, so their CPU is not counted (process.threadCpuUsage).
// A step of `npm run bench` (bench/run.ts); alone: npm exec -- node bench/job-costs.ts [N]
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { JobsConfig } from '../src/config/schema.ts';
import { startSimulator } from '../src/simulator/server.ts';
import { openJobStore, trackerOnStore } from '../test/jobs/support/job-store.ts';
import { createUpstreamClient } from '../src/upstream/client.ts';
import { startReceiver } from '../test/webhooks/support/receiver.ts';
import { openTestService, settlement, tenantWith } from '../test/webhooks/support/service-harness.ts';
import { startRedis } from './redis.ts';

const TOKEN = 'bench-job-costs-token';
const PEERS_ROLE = 'job-costs-peers';
// Jobs created, reserved and told per batch while setting up (not measured).
const SETUP_BATCH = 500;
const CHECK_INTERVAL_MS = 20;
// The jobs a tracker's turn settles, and so tells the webhook service at once (src/jobs/tracker.ts).
const TOLD_PER_BATCH = 64;
const MICROSECONDS_PER_MS = 1_000;
/** Jobs followed in `npm run bench`, and with --smoke. */
const JOB_COSTS_JOBS = 10_000;
const SMOKE_JOB_COSTS_JOBS = 500;

interface JobCosts {
  jobs: number;
  trackerCpuMicrosecondsPerJob: number;
  trackerJobsPerSecond: number;
  webhookCpuMicrosecondsPerJob: number;
  webhookJobsPerSecond: number;
}

type PeerRequest = { kind: 'create'; requestIds: string[] } | { kind: 'delivered'; count: number };
type PeerReply =
  | { kind: 'ready'; simulatorUrl: string; receiverOrigin: string }
  | { kind: 'created' }
  | { kind: 'delivered' };

/** The worker thread: the simulator (jobs that end at once) and the webhook receiver. */
async function runPeers(): Promise<void> {
  const port = parentPort!;
  const simulator = await startSimulator({
    host: '127.0.0.1',
    port: 0,
    tokens: [{ name: 'shared', token: TOKEN }],
    requestsPerMinute: 1_000_000_000,
    maxQueued: 1_000_000,
    queuedMs: 0,
    processingMs: 0,
  });
  const receiver = await startReceiver();
  let awaited: number | undefined;
  const checkDelivered = () => {
    if (awaited !== undefined && receiver.requests.length >= awaited) {
      awaited = undefined;
      // The bodies are not needed: the count is.
      receiver.requests.length = 0;
      port.postMessage({ kind: 'delivered' } satisfies PeerReply);
    }
  };
  const timer = setInterval(checkDelivered, CHECK_INTERVAL_MS);
  port.on('message', (message: PeerRequest | 'close') => {
    if (message === 'close') {
      clearInterval(timer);
      void Promise.all([simulator.close(), receiver.close()]).then(() => {
        port.close();
      });
      return;
    }
    if (message.kind === 'delivered') {
      awaited = message.count;
      checkDelivered();
      return;
    }
    void (async () => {
      for (let index = 0; index < message.requestIds.length; index += SETUP_BATCH) {
        await Promise.all(
          message.requestIds.slice(index, index + SETUP_BATCH).map(async (requestId) => {
            const response = await fetch(`${simulator.url}/v1/images/generations`, {
              method: 'POST',
              headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
              body: JSON.stringify({ requestId }),
            });
            if (response.status !== 200) throw new Error(`the simulator answered ${response.status}`);
            await response.arrayBuffer();
          }),
        );
      }
      port.postMessage({ kind: 'created' } satisfies PeerReply);
    })();
  });
  port.postMessage({
    kind: 'ready',
    simulatorUrl: simulator.url,
    receiverOrigin: receiver.origin,
  } satisfies PeerReply);
}

interface Peers {
  simulatorUrl: string;
  receiverOrigin: string;
  ask(request: PeerRequest): Promise<void>;
  close(): Promise<void>;
}

async function startPeers(): Promise<Peers> {
  const worker = new Worker(fileURLToPath(import.meta.url), { workerData: { role: PEERS_ROLE } });
  const replies: PeerReply[] = [];
  const waiting: ((reply: PeerReply) => void)[] = [];
  worker.on('message', (reply: PeerReply) => {
    const next = waiting.shift();
    if (next === undefined) replies.push(reply);
    else next(reply);
  });
  const failed = new Promise<never>((_resolve, reject) => {
    worker.once('error', reject);
  });
  const nextReply = () =>
    Promise.race([
      failed,
      new Promise<PeerReply>((resolve) => {
        const queued = replies.shift();
        if (queued === undefined) waiting.push(resolve);
        else resolve(queued);
      }),
    ]);
  const ready = await nextReply();
  if (ready.kind !== 'ready') throw new Error('the peers did not start');
  return {
    simulatorUrl: ready.simulatorUrl,
    receiverOrigin: ready.receiverOrigin,
    async ask(request) {
      worker.postMessage(request);
      await nextReply();
    },
    async close() {
      worker.postMessage('close');
      await new Promise((resolve) => worker.once('exit', resolve));
    },
  };
}

/** This thread's CPU since `from`, µs. */
function cpuSince(from: NodeJS.CpuUsage): number {
  const used = process.threadCpuUsage(from);
  return used.user + used.system;
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, CHECK_INTERVAL_MS));
}

/** N jobs reserved and submitted, each complete at the simulator: the tracker follows each to its end. */
async function measureTracker(redisUrl: string, peers: Peers, jobs: number) {
  const store = await openJobStore({
    redisUrl,
    keyPrefix: 'job-costs:',
    failMode: 'closed',
    commandTimeoutMs: 5_000,
    leaseMs: 30_000,
  });
  const upstream = createUpstreamClient({ baseUrl: peers.simulatorUrl, timeoutMs: 10_000 });
  try {
    const requestIds = Array.from({ length: jobs }, () => randomUUID());
    await peers.ask({ kind: 'create', requestIds });
    const reservation = {
      route: 'images.create' as const,
      credential: 'shared',
      costMicroUsd: 10_000,
      dailyMicroUsd: 1_000_000_000,
      monthlyMicroUsd: 1_000_000_000,
      tenantMaxInFlight: jobs,
      credentialMaxInFlight: jobs,
    };
    for (let index = 0; index < jobs; index += SETUP_BATCH) {
      await Promise.all(
        requestIds.slice(index, index + SETUP_BATCH).map(async (requestId) => {
          await store.admission.admit('team-a', [], { requestId, intent: 'claim' }, reservation);
          await store.jobs.submitted(requestId, 0);
        }),
      );
    }
    let settled = 0;
    let failure: Error | undefined;
    // The poll rate is not what is measured: high enough never to hold the tracker back.
    const config: JobsConfig = {
      leaseMs: 30_000,
      maxAgeSeconds: 86_400,
      maxPollsPerSecondPerCredential: 1_000_000,
      firstPollMs: 1,
      maxPollIntervalMs: 1_000,
    };
    const tracker = trackerOnStore(store, {
      upstream,
      token: TOKEN,
      config,
      onSettled: () => {
        settled += 1;
      },
      onFailure: (error) => {
        failure ??= error instanceof Error ? error : new Error(String(error));
      },
    });
    const cpu = process.threadCpuUsage();
    const started = performance.now();
    tracker.start();
    await until(() => settled >= jobs || failure !== undefined);
    if (failure !== undefined) throw failure;
    // The last turn tells its listeners and forgets its jobs.
    await tracker.stop();
    const cpuMicroseconds = cpuSince(cpu);
    const seconds = (performance.now() - started) / MICROSECONDS_PER_MS;
    const backlog = await store.jobs.backlog();
    if (backlog.count !== 0) throw new Error(`${backlog.count} jobs left after the tracker settled ${jobs}`);
    return { cpuMicrosecondsPerJob: cpuMicroseconds / jobs, jobsPerSecond: jobs / seconds };
  } finally {
    await upstream.close();
    await store.close();
  }
}

/** N job ends told to the webhook service at once, each delivered to the loopback receiver. */
async function measureWebhooks(redisUrl: string, peers: Peers, jobs: number) {
  const webhooks = await openTestService({
    redisUrl,
    tenants: [tenantWith('team-a', [{ id: 'done', url: `${peers.receiverOrigin}/hook` }])],
    webhooks: { concurrencyPerDestination: 64 },
  });
  try {
    const delivered = peers.ask({ kind: 'delivered', count: jobs });
    const cpu = process.threadCpuUsage();
    const started = performance.now();
    // In batches, as the tracker tells them: a turn's jobs at once.
    for (let told = 0; told < jobs; told += TOLD_PER_BATCH) {
      const batch = Math.min(TOLD_PER_BATCH, jobs - told);
      await Promise.all(
        Array.from({ length: batch }, () => webhooks.onJobEnded(settlement('team-a', randomUUID()))),
      );
    }
    await delivered;
    const cpuMicroseconds = cpuSince(cpu);
    const seconds = (performance.now() - started) / MICROSECONDS_PER_MS;
    return { cpuMicrosecondsPerJob: cpuMicroseconds / jobs, jobsPerSecond: jobs / seconds };
  } finally {
    await webhooks.close();
  }
}

async function measureJobCosts(jobs: number): Promise<JobCosts> {
  const redis = await startRedis();
  const peers = await startPeers();
  try {
    const tracker = await measureTracker(redis.url, peers, jobs);
    const webhook = await measureWebhooks(redis.url, peers, jobs);
    return {
      jobs,
      trackerCpuMicrosecondsPerJob: tracker.cpuMicrosecondsPerJob,
      trackerJobsPerSecond: tracker.jobsPerSecond,
      webhookCpuMicrosecondsPerJob: webhook.cpuMicrosecondsPerJob,
      webhookJobsPerSecond: webhook.jobsPerSecond,
    };
  } finally {
    await peers.close();
    await redis.process.stop();
  }
}

function jobCostsLine(costs: JobCosts): string {
  return (
    `Job costs over ${costs.jobs} jobs on Redis: tracker ${costs.trackerCpuMicrosecondsPerJob.toFixed(0)} µs CPU per job ` +
    `(${costs.trackerJobsPerSecond.toFixed(0)} jobs/s), webhook sender ` +
    `${costs.webhookCpuMicrosecondsPerJob.toFixed(0)} µs CPU per job (${costs.webhookJobsPerSecond.toFixed(0)} jobs/s)`
  );
}

/** bench/run.ts's step: measured and printed. */
export async function reportJobCosts(smoke: boolean, print: (text: string) => void): Promise<JobCosts> {
  const costs = await measureJobCosts(smoke ? SMOKE_JOB_COSTS_JOBS : JOB_COSTS_JOBS);
  print(jobCostsLine(costs));
  return costs;
}

const isPeers = !isMainThread && (workerData as { role?: string } | null)?.role === PEERS_ROLE;
if (isPeers) await runPeers();
else if (isMainThread && process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(`${jobCostsLine(await measureJobCosts(Number(process.argv[2] ?? JOB_COSTS_JOBS)))}\n`);
}
