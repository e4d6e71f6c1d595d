// The least a gateway keeping gengate's contract does for each create, built on gengate's stack and
// nothing of gengate's design: the floor (bench/fastify-forward.ts), plus, each turned on by its option,
//   --checks        the tenant's key looked up by its SHA-256, the body parsed without losing a digit
//                   (gengate's scan and parse, docs/decisions/0023-numbers-judged-on-their-text.md),
//                   judged by the published schema's Ajv validator, a count and a duration in prom-client;
//   --log           one pino line per request through gengate's log destination settings;
//   --redis URL     one Redis round trip per request through ioredis: a Lua script that charges a counter
//                   and claims the request's id, one call for all the requests of an event-loop turn,
//                   sent in the turn's one write (gengate's own batching, src/store/redis/send-per-turn.ts).
// It is a lower bound, not a gateway: nothing is refused, no policy, no fingerprint, no budget, no
// reservation, no answer recorded, no header added. `node bench/feature-costs.ts` runs it beside
// gengate and the floor, so that the CPU per request it costs says how much of gengate's excess
// over the floor the stack itself sets (docs/performance.md, "What each feature costs").
// Usage: node bench/least-gateway.ts --port N --upstream URL [--checks] [--log] [--redis URL]
import { createHash, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import pino from 'pino';
import { Counter, Histogram, Registry } from 'prom-client';
import { DEFAULT_UPSTREAM_TIMEOUT_MS } from '../src/config/schema.ts';
import { batchPerTurn, createCommandSender } from '../src/store/redis/send-per-turn.ts';
import { createUpstreamClient } from '../src/upstream/client.ts';
import { parseJsonBody } from '../src/validation/json-body.ts';
import { routeSchemaFor } from '../src/validation/request-schemas.ts';
import { LEAST_GATEWAY_KEY, SUBMISSION_PATH } from './request-body.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    upstream: { type: 'string' },
    checks: { type: 'boolean' },
    log: { type: 'boolean' },
    redis: { type: 'string' },
  },
  strict: true,
});
if (values.upstream === undefined) throw new Error('--upstream is required');

// gengate's own destination settings (src/main.ts): 8 KB asynchronous writes, flushed every 250 ms.
const LOG_BUFFER_BYTES = 8_192;
const LOG_FLUSH_MS = 250;
const CLAIM_TTL_MS = 60_000;
const ROUTE = 'images.create';
// Charges a counter and claims each id unless taken (KEYS[2..]): the least an admission does.
const ADMIT_SCRIPT = `
local claimed = {}
for index = 2, #KEYS do
  redis.call('INCRBY', KEYS[1], ARGV[1])
  claimed[index - 1] = redis.call('SET', KEYS[index], ARGV[2], 'PX', ARGV[3], 'NX') and 1 or 0
end
return claimed`;

const upstream = createUpstreamClient({ baseUrl: values.upstream, timeoutMs: DEFAULT_UPSTREAM_TIMEOUT_MS });
const app = Fastify(
  values.log === true
    ? {
        loggerInstance: pino(
          { level: 'info', base: { service: 'least-gateway' } },
          pino.destination({ sync: false, minLength: LOG_BUFFER_BYTES, periodicFlush: LOG_FLUSH_MS }),
        ),
        disableRequestLogging: true,
      }
    : { logger: false },
);

const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url');
const tenantByKeyHash = new Map([[sha256(LEAST_GATEWAY_KEY), 'bench']]);
const validate = routeSchemaFor(ROUTE)!.validate;
const registry = new Registry();
const requests = new Counter({
  name: 'requests_total',
  help: 'Requests answered.',
  labelNames: ['route', 'method', 'status', 'tenant'],
  registers: [registry],
});
const duration = new Histogram({
  name: 'request_duration_seconds',
  help: 'Time to answer.',
  labelNames: ['route'],
  registers: [registry],
});

const redis = values.redis === undefined ? undefined : new Redis(values.redis);
redis?.defineCommand('admit', { lua: ADMIT_SCRIPT });
const sender = redis === undefined ? undefined : createCommandSender(redis);
// One tenant here: the turn's claims share its counter.
const admitInTurn =
  sender?.turn === undefined
    ? undefined
    : batchPerTurn(
        async (claimKeys: readonly string[]) =>
          (await sender.send('admit', [
            claimKeys.length + 1,
            'least:charge:bench',
            ...claimKeys,
            1,
            'bench',
            CLAIM_TTL_MS,
          ])) as number[],
        sender.turn.atTurnEnd,
      ).add;

app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
  done(null, body);
});

app.post(SUBMISSION_PATH, async (request, reply) => {
  const startedAt = performance.now();
  const raw = request.body as Buffer;
  let tenant = 'none';
  if (values.checks === true) {
    const known = tenantByKeyHash.get(sha256(request.headers.authorization?.slice('Bearer '.length) ?? ''));
    if (known === undefined) return reply.code(401).send();
    tenant = known;
    const body = parseJsonBody(raw);
    const result = validate(body.value, body.numbers);
    if (!result.ok) throw new Error('the benchmark body must be valid');
  }
  if (admitInTurn !== undefined) await admitInTurn(`least:claim:${randomUUID()}`);
  const response = await upstream.send({
    method: 'POST',
    path: SUBMISSION_PATH,
    headers: { 'content-type': 'application/json' },
    body: raw,
  });
  if (values.checks === true) {
    requests.labels(ROUTE, 'POST', String(response.status), tenant).inc();
    duration.labels(ROUTE).observe((performance.now() - startedAt) / 1000);
  }
  if (values.log === true) {
    request.log.info(
      {
        tenant,
        route: ROUTE,
        method: 'POST',
        status: response.status,
        durationMs: performance.now() - startedAt,
      },
      'request completed',
    );
  }
  return reply.code(response.status).header('content-type', 'application/json').send(response.body);
});
await app.listen({ host: '127.0.0.1', port: Number(values.port ?? 0) });
process.once('SIGTERM', () => {
  void app
    .close()
    .then(() => redis?.quit())
    .then(() => process.exit(0));
});
