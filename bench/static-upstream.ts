// The stand-in for the generation service: answers a submission with a constant envelope and as little
// work as possible, so that what the benchmark measures is the proxy in front of it. It also receives
// the benchmark tenant's completion webhooks.
// Usage: node bench/static-upstream.ts --port N
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { SUBMISSION_PATH, SUBMISSION_RESPONSE, WEBHOOK_PATH } from './request-body.ts';

const KEEP_ALIVE_TIMEOUT_MS = 60_000;
const ANSWER = Buffer.from(SUBMISSION_RESPONSE);
const ANSWER_HEADERS = { 'content-type': 'application/json', 'content-length': String(ANSWER.length) };
const NOT_FOUND = Buffer.from('{"status":404,"error":{"code":"not_found","type":"not_found_error"}}');
const NOT_FOUND_HEADERS = { 'content-type': 'application/json', 'content-length': String(NOT_FOUND.length) };

const { values } = parseArgs({ options: { port: { type: 'string' } }, strict: true });

const server = createServer((request, response) => {
  // The body is read (as the service would) but not parsed.
  request.resume();
  request.once('end', () => {
    if (request.method === 'POST' && request.url === SUBMISSION_PATH) {
      response.writeHead(200, ANSWER_HEADERS).end(ANSWER);
    } else if (request.method === 'POST' && request.url === WEBHOOK_PATH) {
      response.writeHead(204).end();
    } else {
      response.writeHead(404, NOT_FOUND_HEADERS).end(NOT_FOUND);
    }
  });
});
server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
server.listen(Number(values.port ?? 0), '127.0.0.1');
