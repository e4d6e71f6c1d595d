// Store writes that could not be sent or confirmed, undone once the store answers again.
//
// A create the gateway refused must leave no claim and no charge behind (docs/ownership.md,
// docs/rate-limits.md), but when the store times out the gateway cannot know whether its admission ran, and
// while the breaker is open it cannot send the release of a claim either. Each such case leaves an undo here:
// a store call that is harmless when there is nothing to undo (it checks the attempt's token, or that the
// claim is still this tenant's pending one). When the breaker closes, the undos are sent before anything else
// uses the store again (listeners run as the breaker closes, and one connection runs commands in order), so a
// client retrying the same requestId after the recovery is admitted at once. Deadlines (store-clock.ts) make
// sure that the command given up on cannot run after its undo: by the time an undo can run, the original
// either ran in time or never takes effect.
import type { StoreBreaker } from './circuit-breaker.ts';
import { isReplyError, type StoreLogger } from './connection.ts';

export type Undo = () => Promise<unknown>;

export interface UndoOnRecovery {
  /** Runs `undo` as soon as the store answers: at once when the breaker is closed, else when it closes. */
  add(undo: Undo): void;
  /** How many undos wait for the store (tests and shutdown logs). */
  readonly waiting: number;
}

export function createUndoOnRecovery(breaker: StoreBreaker, logger: StoreLogger): UndoOnRecovery {
  let waiting: Undo[] = [];

  function run(undo: Undo): void {
    undo().catch((error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      // Redis ran it and answered an error: sending it again would fail again (and, tripping the
      // breaker each time, keep the store off the request path for good).
      if (isReplyError(error)) {
        logger.warn({ err: message }, 'store undo refused by the store; the claim stays until it expires');
        return;
      }
      // Not answered: kept for the next recovery (an undo is idempotent, so sending it again is safe).
      waiting.push(undo);
      if (breaker.trip()) logger.warn({ err: message }, 'store undo failed');
    });
  }

  breaker.onChange((open) => {
    if (open) return;
    const due = waiting;
    waiting = [];
    for (const undo of due) run(undo);
  });

  return {
    add(undo) {
      if (breaker.open) waiting.push(undo);
      else run(undo);
    },
    get waiting() {
      return waiting.length;
    },
  };
}
