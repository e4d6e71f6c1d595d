// The simulator in a worker thread of its own, for the flood (test/faults/flood.test.ts): in the test's
// own thread it would answer the replica only between the test's other work (reading the replica's log
// lines during a flood), and show that as the replica's latency.
import { parentPort, workerData } from 'node:worker_threads';
import { startSimulator } from '../../../src/simulator/server.ts';

const { token } = workerData as { token: string };
const simulator = await startSimulator({
  host: '127.0.0.1',
  port: 0,
  tokens: [{ name: 'shared', token }],
  queuedMs: 0,
  processingMs: 0,
  requestsPerMinute: 100_000_000,
});
// The test ends the worker, and the simulator with it.
parentPort?.postMessage(simulator.url);
