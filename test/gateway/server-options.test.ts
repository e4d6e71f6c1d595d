// The gateway's keep-alive settings, as a balancer in front depends on them: idle connections outlive
// the balancer's own idle timeout (60 s for nginx and cloud balancers), and a connection is closed with its answer
// after maxRequestsPerSocket requests so that traffic spreads over replicas added since.
import { connect } from 'node:net';
import { once } from 'node:events';
import { afterEach, expect, test } from 'vitest';
import { waitFor } from '../support/wait-for.ts';
import { startGatewayHarness, type GatewayHarness } from '../support/gateway-harness.ts';

let harness: GatewayHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

test('keep-alive outlives common balancers; the 1000th answer on a connection closes it', async () => {
  harness = await startGatewayHarness();
  expect(harness.app.server.keepAliveTimeout).toBe(72_000);
  const { hostname, port } = new URL(harness.url);
  const socket = connect(Number(port), hostname);
  await once(socket, 'connect');
  let received = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
  // Pipelined: the gateway answers them in order, and tells the client to close after the last one.
  socket.write(`GET /v1/account/keys HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`.repeat(1_000));
  const answersSoFar = () => received.split(/(?=HTTP\/1\.1 )/);
  await waitFor('1000 answers', () => answersSoFar().length === 1_000 && received.endsWith('}'));
  socket.destroy();
  const answers = answersSoFar();
  expect(answers).toHaveLength(1_000);
  expect(answers.slice(0, 999).every((answer) => /\r\nconnection: keep-alive\r\n/i.test(answer))).toBe(true);
  expect(answers[999]).toMatch(/^HTTP\/1\.1 401 [^]*\r\nconnection: close\r\n/i);
});
