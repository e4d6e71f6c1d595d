// Answers leaving (docs/reliability.md, "Overload"). A bound on the time an answer may take to leave: a
// client that never reads its answer otherwise pins it in memory for as long as it keeps the connection
// (a 10 MiB request echoed in a 400 held about 30 MiB per connection; 80 such connections took the RSS
// past 2 GB). Once the whole answer is handed to the socket ('prefinish'), it must reach the kernel
// ('finish') within `sendTimeoutMs`, or the connection is destroyed and the answer freed. One sweep a
// second over the answers still leaving, rather than a timer per request.
//
// What such an answer still holds in the socket's buffer counts against the process's bound on bytes held
// for answers (src/upstream/bytes-in-flight.ts), the same count the upstream bodies being read take from:
// twenty unread 32 MiB polls otherwise held 885 MiB within their send timeout. The count is read off the
// socket when the answer is handed over and at each sweep, so it follows what has left since.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { BytesInFlight } from '../upstream/bytes-in-flight.ts';

const SWEEP_INTERVAL_MS = 1_000;

export interface AnswersLeavingOptions {
  sendTimeoutMs: number;
  /** Where the bytes of answers not yet left are counted. */
  bytesInFlight: BytesInFlight;
  onTimeout: () => void;
}

interface LeavingAnswer {
  deadline: number;
  /** Counted in `bytesInFlight` for this answer now. */
  bytes: number;
}

/** The bytes of an answer not yet handed to the kernel: in its socket's buffer (or its own, unassigned). */
function bytesNotLeft(response: ServerResponse): number {
  return response.socket?.writableLength ?? response.writableLength;
}

/** Destroys connections whose answer has not left within `sendTimeoutMs`; returns the way to stop. */
export function limitSendTime(server: Server, options: AnswersLeavingOptions): () => void {
  const { sendTimeoutMs, bytesInFlight, onTimeout } = options;
  const leaving = new Map<ServerResponse, LeavingAnswer>();
  const forget = (response: ServerResponse) => {
    const answer = leaving.get(response);
    if (answer === undefined) return;
    leaving.delete(response);
    bytesInFlight.release(answer.bytes);
  };
  // Listeners shared by every response (`this` is the response): no closure per request.
  function noteLeaving(this: ServerResponse) {
    if (this.writableFinished) return;
    const bytes = bytesNotLeft(this);
    bytesInFlight.add(bytes);
    leaving.set(this, { deadline: performance.now() + sendTimeoutMs, bytes });
  }
  function forgetClosed(this: ServerResponse) {
    forget(this);
  }
  // First among the request listeners: the application's may answer at once, and 'prefinish' with it.
  server.prependListener('request', (_request: IncomingMessage, response: ServerResponse) => {
    response.once('prefinish', noteLeaving);
    response.once('close', forgetClosed);
  });
  const sweep = setInterval(() => {
    const now = performance.now();
    for (const [response, answer] of leaving) {
      if (response.writableFinished) forget(response);
      else if (now >= answer.deadline) {
        forget(response);
        response.destroy();
        onTimeout();
      } else {
        const bytes = bytesNotLeft(response);
        bytesInFlight.release(answer.bytes - bytes);
        answer.bytes = bytes;
      }
    }
  }, SWEEP_INTERVAL_MS).unref();
  return () => {
    clearInterval(sweep);
  };
}
