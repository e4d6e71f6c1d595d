// The framework baseline: @fastify/http-proxy with its defaults and nothing else (no logging, no
// parsing, no checks), forwarding every request to the upstream.
// Usage: node bench/bare-proxy.ts --port N --upstream http://127.0.0.1:M
import httpProxy from '@fastify/http-proxy';
import Fastify from 'fastify';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { port: { type: 'string' }, upstream: { type: 'string' } },
  strict: true,
});
if (values.upstream === undefined) throw new Error('--upstream is required');

const app = Fastify({ logger: false });
await app.register(httpProxy, { upstream: values.upstream });
await app.listen({ host: '127.0.0.1', port: Number(values.port ?? 0) });
