// The upstream simulator as a Fastify app: built here, never listening (see server.ts). It stands in
// for the MaxAI service in the demo and the tests; docs/simulator.md says what it does and guesses.
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { stringifyJson } from './lossless-json.ts';
import { createAccountRegistry, type SimulatedToken } from './accounts.ts';
import { CONTROL_PREFIX, registerControlRoutes } from './control.ts';
import { installSimulatedErrorHandling } from './errors.ts';
import { createFaultSwitch, jobTwistOf, playFault, type FaultSwitch, type JobTwist } from './faults.ts';
import { createJobStore } from './jobs.ts';
import { createRequestRecord, type ReceivedRequest } from './record.ts';
import { registerServiceRoutes } from './routes.ts';

/** Demo pacing: long enough to watch a job go queued, processing, completed. Tests pass 0. */
export const DEFAULT_QUEUED_MS = 1_500;
export const DEFAULT_PROCESSING_MS = 2_500;
export const DEFAULT_REQUESTS_PER_MINUTE = 600;
/** The service's documented limit of requests queued at once per account. */
const DEFAULT_MAX_QUEUED = 25;
// Large enough for seed images sent as data URIs.
const BODY_LIMIT_BYTES = 32 * 1024 * 1024;

export interface SimulatorOptions {
  /** Each token is one upstream account; `name` names the account. */
  tokens: SimulatedToken[];
  /** Epoch milliseconds; inject one to drive the job lifecycle and rate windows in tests. */
  clock?: () => number;
  queuedMs?: number;
  processingMs?: number;
  requestsPerMinute?: number;
  maxQueued?: number;
  /** Each image sample costs this (USD), so tests can compute the truth; by default a size formula. */
  imageUsdPerSample?: number;
  /** Off by default. Fastify's request log lines carry no headers, so no token is ever logged. */
  logger?: FastifyBaseLogger;
}

export interface Simulator {
  app: FastifyInstance;
  /** Every request that arrived under /v1 or elsewhere (not the control API), in arrival order. */
  received: ReceivedRequest[];
  clearReceived(): void;
  faults: FaultSwitch;
  /** Polls of a job (GET of one record) per account name: what the gateway's tracker spends. */
  polls: ReadonlyMap<string, number>;
}

function isServiceRequest(request: FastifyRequest): boolean {
  return request.url === '/v1' || request.url.startsWith('/v1/');
}

export function createSimulator(options: SimulatorOptions): Simulator {
  const clock = options.clock ?? Date.now;
  const app = Fastify({
    ...(options.logger === undefined ? { logger: false } : { loggerInstance: options.logger }),
    bodyLimit: BODY_LIMIT_BYTES,
    exposeHeadRoutes: false,
    // A stalled response must not keep close() waiting.
    forceCloseConnections: true,
  });
  const record = createRequestRecord();
  const faults = createFaultSwitch();
  const closing = new AbortController();
  const entries = new WeakMap<FastifyRequest, ReceivedRequest>();
  const jobTwists = new WeakMap<FastifyRequest, JobTwist>();
  const polls = new Map<string, number>();

  app.setReplySerializer((payload) => stringifyJson(payload));
  // Every body is kept as raw bytes: the record needs them, and the routes parse JSON themselves.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => {
    done(null, body);
  });

  app.addHook('onRequest', (request, _reply, done) => {
    if (!request.url.startsWith(CONTROL_PREFIX)) {
      const { method = '', url = '', headers } = request.raw;
      entries.set(request, record.add({ method, url, headers, at: clock() }));
    }
    done();
  });
  app.addHook('preValidation', (request, _reply, done) => {
    const entry = entries.get(request);
    if (entry !== undefined && Buffer.isBuffer(request.body)) entry.body = request.body;
    done();
  });
  app.addHook('preHandler', async (request, reply) => {
    if (!isServiceRequest(request)) return;
    const fault = faults.take(request.method, request.url);
    if (fault === undefined) return;
    const twist = jobTwistOf(fault);
    if (twist !== undefined) jobTwists.set(request, twist);
    if (await playFault(fault, request, reply, closing.signal)) return reply;
  });
  app.addHook('preClose', (done) => {
    closing.abort();
    done();
  });

  installSimulatedErrorHandling(app);
  registerServiceRoutes(app, {
    accounts: createAccountRegistry(options.tokens, {
      requestsPerMinute: options.requestsPerMinute ?? DEFAULT_REQUESTS_PER_MINUTE,
      clock,
    }),
    jobs: createJobStore({
      clock,
      queuedMs: options.queuedMs ?? DEFAULT_QUEUED_MS,
      processingMs: options.processingMs ?? DEFAULT_PROCESSING_MS,
    }),
    clock,
    maxQueued: options.maxQueued ?? DEFAULT_MAX_QUEUED,
    startedAtMs: clock(),
    jobTwistOf: (request) => jobTwists.get(request),
    imageUsdPerSample: options.imageUsdPerSample,
    countPoll: (account) => {
      polls.set(account, (polls.get(account) ?? 0) + 1);
    },
  });
  registerControlRoutes(app, record, faults);

  return {
    app,
    received: record.entries,
    clearReceived: () => {
      record.clear();
    },
    faults,
    polls,
  };
}
