// The service's routes under /v1, as docs/simulator.md describes them, plus the result downloads the
// records point at. Every /v1 route authenticates and counts against the account's per-minute limit.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseJsonLossless } from './lossless-json.ts';
import { successEnvelope } from '../maxai/envelope.ts';
import { imageRequestSchema, videoRequestSchema } from '../maxai/schemas.ts';
import {
  createRequestValidator,
  describeProblem,
  toErrorDetails,
  type RequestValidator,
} from '../validation/request-validator.ts';
import { startOfMonthUtc, type Account, type AccountRegistry } from './accounts.ts';
import { simulatedError } from './errors.ts';
import { jobView } from './job-view.ts';
import type { JobTwist } from './faults.ts';
import type { JobStore } from './jobs.ts';
import { renderPng } from './png.ts';
import { roundUsd } from './pricing.ts';
import { planImageJob, planVideoJob, type JobKind, type JobPlan } from './submissions.ts';

export interface ServiceRouteDeps {
  accounts: AccountRegistry;
  jobs: JobStore;
  clock: () => number;
  maxQueued: number;
  /** When the simulator started: the creation date of every simulated key. */
  startedAtMs: number;
  /** What a fault does to the job this request creates. */
  jobTwistOf(request: FastifyRequest): JobTwist | undefined;
  imageUsdPerSample: number | undefined;
  countPoll(accountName: string): void;
}

// [guess] An invented starting balance; the dashboard shows one, its API shape is unknown.
const STARTING_BALANCE_USD = 100;
const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;
const JSON_MEDIA_TYPE = /^application\/json\s*(;|$)/i;
const RESULT_FILE_NAME = /^(\d+)\.png$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

// The service judges with its own (guessed) ranges and ignores unknown fields.
const SERVICE_SCHEMA_OPTIONS = { unknownTopLevel: 'allow', guessedRanges: true } as const;
const validators: Record<JobKind, RequestValidator> = {
  image: createRequestValidator(imageRequestSchema(SERVICE_SCHEMA_OPTIONS)),
  video: createRequestValidator(videoRequestSchema(SERVICE_SCHEMA_OPTIONS)),
};
const planners: Record<JobKind, (body: Record<string, unknown>) => JobPlan> = {
  image: planImageJob,
  video: planVideoJob,
};

// Synchronous: Fastify sends what a handler returns and answers what it throws.
type Handler = (request: FastifyRequest, reply: FastifyReply) => unknown;

function readJsonObject(request: FastifyRequest): Record<string, unknown> {
  if (!JSON_MEDIA_TYPE.test(request.headers['content-type'] ?? '')) {
    throw simulatedError('unsupported_media_type', 'request bodies must be application/json');
  }
  const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  let value: unknown;
  try {
    value = parseJsonLossless(utf8.decode(raw));
  } catch {
    throw simulatedError('invalid_json', 'the request body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw simulatedError('invalid_json', 'body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

function validated(kind: JobKind, body: Record<string, unknown>): void {
  const result = validators[kind](body);
  if (result.ok) return;
  const [first] = result.problems;
  if (first === undefined) return;
  throw simulatedError('invalid_parameter', describeProblem(first), {
    param: first.param,
    details: toErrorDetails(result.problems),
  });
}

function baseUrlOf(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

export function registerServiceRoutes(app: FastifyInstance, deps: ServiceRouteDeps): void {
  const { accounts, jobs, clock } = deps;
  const callers = new WeakMap<FastifyRequest, Account>();
  const callerOf = (request: FastifyRequest): Account => {
    const account = callers.get(request);
    if (account === undefined) throw new Error('service route reached without authentication');
    return account;
  };

  function authenticateAndCount(request: FastifyRequest, reply: FastifyReply): void {
    const account = accounts.authenticate(request.headers.authorization);
    if (account === 'missing' || account === 'unknown') {
      throw simulatedError(
        account === 'missing' ? 'missing_api_key' : 'invalid_api_key',
        account === 'missing' ? 'an Authorization: Bearer token is required' : 'the API key is not valid',
        { headers: { 'www-authenticate': 'Bearer' } },
      );
    }
    const decision = accounts.chargeRequest(account);
    void reply.headers({
      'x-ratelimit-limit': String(decision.limit),
      'x-ratelimit-remaining': String(decision.remaining),
      'x-ratelimit-reset': String(decision.resetEpochSeconds),
    });
    if (!decision.admitted) {
      throw simulatedError(
        'rate_limit_exceeded',
        `at most ${decision.limit} requests per minute are allowed`,
        {
          headers: { 'retry-after': String(decision.retryAfterSeconds) },
        },
      );
    }
    callers.set(request, account);
  }

  function refuseWhenQueueFull(account: Account): void {
    const { count, nextFinishMs } = jobs.unfinished(account);
    if (count < deps.maxQueued) return;
    const now = clock();
    const retryAfterSeconds = Math.max(1, Math.ceil(((nextFinishMs ?? now) - now) / 1000));
    throw simulatedError(
      'too_many_queued_requests',
      `at most ${deps.maxQueued} requests may be queued at once`,
      {
        headers: { 'retry-after': String(retryAfterSeconds) },
      },
    );
  }

  const create =
    (kind: JobKind): Handler =>
    (request) => {
      const account = callerOf(request);
      const body = readJsonObject(request);
      validated(kind, body);
      refuseWhenQueueFull(account);
      // [unknown] The service's answer to a reused requestId is not documented; 409 is the safe guess.
      const twist = deps.jobTwistOf(request);
      const resultCostUsd = twist?.resultCostUsd ?? (kind === 'image' ? deps.imageUsdPerSample : undefined);
      const job = jobs.submit(account, planners[kind](body), {
        fails: twist?.fails ?? false,
        stalls: twist?.stalls ?? false,
        resultCostUsd,
      });
      if (job === 'conflict')
        throw simulatedError('request_id_conflict', 'this requestId has already been used', {
          param: 'requestId',
        });
      return successEnvelope({ requestId: job.id });
    };

  const jobOf = (kind: JobKind, request: FastifyRequest) => {
    const { requestId } = request.params as { requestId: string };
    const job = jobs.find(callerOf(request), kind, requestId);
    if (job === undefined) throw simulatedError('request_not_found', 'no request with this id');
    return job;
  };

  const poll =
    (kind: JobKind): Handler =>
    (request) => {
      const job = jobOf(kind, request);
      deps.countPoll(job.owner.name);
      return successEnvelope(jobView(job, jobs, baseUrlOf(request)));
    };

  // [unknown] DELETE's real shape is not documented: it cancels a job still queued or processing and
  // answers the record; a finished job is left as it is and its record answered (idempotent).
  const cancelVideo: Handler = (request) => {
    const job = jobOf('video', request);
    jobs.cancel(job);
    return successEnvelope(jobView(job, jobs, baseUrlOf(request)));
  };

  // [unknown] The usage body is not documented; this shape is invented and plausible.
  const usage: Handler = (request) => {
    const account = callerOf(request);
    const monthStartMs = startOfMonthUtc(clock());
    const thisMonth = jobs.usageSince(account, monthStartMs);
    const nextMonth = new Date(monthStartMs);
    nextMonth.setUTCMonth(nextMonth.getUTCMonth() + 1);
    return successEnvelope({
      userId: account.userId,
      period: { start: new Date(monthStartMs).toISOString(), end: nextMonth.toISOString() },
      requests: accounts.requestsThisMonth(account),
      images: thisMonth.images,
      videoSeconds: thisMonth.videoSeconds,
      totalCost: thisMonth.costUsd,
      balance: roundUsd(STARTING_BALANCE_USD - jobs.usageSince(account, 0).costUsd),
      currency: 'USD',
    });
  };

  const keys: Handler = (request) => {
    const account = callerOf(request);
    const createdAt = new Date(deps.startedAtMs).toISOString();
    return successEnvelope([
      {
        id: account.keyId,
        userId: account.userId,
        partialKey: account.partialKey,
        name: `${account.name} key`,
        permissions: ['images', 'videos', 'account'],
        createdAt,
        updatedAt: createdAt,
        description: 'simulated upstream key',
        expirationDate: null,
      },
    ]);
  };

  const routes: Record<string, Partial<Record<(typeof HTTP_METHODS)[number], Handler>>> = {
    '/v1/images/generations': { POST: create('image') },
    '/v1/images/generations/:requestId': { GET: poll('image') },
    '/v1/videos/generations': { POST: create('video') },
    '/v1/videos/generations/:requestId': { GET: poll('video'), DELETE: cancelVideo },
    '/v1/account/usage': { GET: usage },
    '/v1/usage': { GET: usage },
    '/v1/account/keys': { GET: keys },
    '/v1/keys': { GET: keys },
  };

  void app.register((service, _options, registered) => {
    service.addHook('preHandler', (request, reply, done) => {
      try {
        authenticateAndCount(request, reply);
        done();
      } catch (error) {
        done(error as Error);
      }
    });
    for (const [url, methods] of Object.entries(routes)) {
      for (const [method, handler] of Object.entries(methods)) service.route({ method, url, handler });
    }
    registered();
  });

  // Wrong methods are answered before authentication, as a router does.
  for (const [url, methods] of Object.entries(routes)) {
    const allow = Object.keys(methods).join(', ');
    const others = HTTP_METHODS.filter((method) => !(method in methods));
    app.route({
      method: [...others],
      url,
      handler: (request) => {
        throw simulatedError('method_not_allowed', `${request.method} is not allowed here; use ${allow}`, {
          headers: { allow },
        });
      },
    });
  }

  app.get('/files/:fileToken/:name', (request, reply) => {
    const { fileToken, name } = request.params as { fileToken: string; name: string };
    const index = Number(RESULT_FILE_NAME.exec(name)?.[1]);
    const job = jobs.findByFileToken(fileToken);
    const result =
      job === undefined || jobs.lifecycleOf(job).status !== 'completed' ? undefined : job.results[index];
    if (job === undefined || result === undefined) throw simulatedError('file_not_found', 'no such file');
    return reply
      .type('image/png')
      .send(renderPng({ seed: result.seed, width: job.width, height: job.height }));
  });
}
