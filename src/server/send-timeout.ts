// A bound on the time an answer may take to leave (docs/reliability.md): a
// client that never reads its answer otherwise pins it in memory for as long as it keeps the connection
// (a 10 MiB request echoed in a 400 held about 30 MiB per connection; 80 such connections took the RSS
// past 2 GB). Once the whole answer is handed to the socket ('prefinish'), it must reach the kernel
// ('finish') within `sendTimeoutMs`, or the connection is destroyed and the answer freed. One sweep a
// second over the answers still leaving, rather than a timer per request.
import type { Server, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';

const SWEEP_INTERVAL_MS = 1_000;

/** Destroys connections whose answer has not left within `sendTimeoutMs`; returns the way to stop. */
export function limitSendTime(server: Server, sendTimeoutMs: number, onTimeout: () => void): () => void {
  const leaving = new Map<ServerResponse, number>();
  // First among the request listeners: the application's may answer at once, and 'prefinish' with it.
  server.prependListener('request', (_request, response: ServerResponse) => {
    response.once('prefinish', () => {
      if (!response.writableFinished) leaving.set(response, performance.now() + sendTimeoutMs);
    });
    response.once('close', () => leaving.delete(response));
  });
  const sweep = setInterval(() => {
    const now = performance.now();
    for (const [response, deadline] of leaving) {
      if (response.writableFinished) leaving.delete(response);
      else if (now >= deadline) {
        leaving.delete(response);
        response.destroy();
        onTimeout();
      }
    }
  }, SWEEP_INTERVAL_MS).unref();
  return () => {
    clearInterval(sweep);
  };
}
