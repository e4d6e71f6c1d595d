// The floor of gengate's own architecture: Fastify reading the body as a Buffer and forwarding it with
// gengate's upstream client, and nothing else: no key, no parse, no schema, no policy, no store, no
// metrics, no log. What gengate costs beyond this row is what its features cost.
// Usage: node bench/fastify-forward.ts --port N --upstream http://127.0.0.1:M
import Fastify from 'fastify';
import { parseArgs } from 'node:util';
import { DEFAULT_UPSTREAM_TIMEOUT_MS } from '../src/config/schema.ts';
import { createUpstreamClient } from '../src/upstream/client.ts';
import { SUBMISSION_PATH } from './request-body.ts';

const { values } = parseArgs({
  options: { port: { type: 'string' }, upstream: { type: 'string' } },
  strict: true,
});
if (values.upstream === undefined) throw new Error('--upstream is required');

const upstream = createUpstreamClient({ baseUrl: values.upstream, timeoutMs: DEFAULT_UPSTREAM_TIMEOUT_MS });
const app = Fastify({ logger: false });
app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
  done(null, body);
});
app.post(SUBMISSION_PATH, async (request, reply) => {
  const response = await upstream.send({
    method: 'POST',
    path: SUBMISSION_PATH,
    headers: { 'content-type': 'application/json' },
    body: request.body as Buffer,
  });
  return reply.code(response.status).header('content-type', 'application/json').send(response.body);
});
await app.listen({ host: '127.0.0.1', port: Number(values.port ?? 0) });
// An orderly exit on SIGTERM, so that `--cpu-prof` writes its profile (bench/profile.ts).
process.once('SIGTERM', () => {
  void app.close().then(() => process.exit(0));
});
