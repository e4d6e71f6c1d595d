// Deadlines in the store's own clock, so that a command the gateway gave up on cannot take effect later.
//
// A command that times out on the client is still in the socket or in Redis's queue (a frozen or busy
// Redis runs it when it resumes). Scripts that write therefore carry a deadline: the moment, in the
// store's clock (TIME), at which the gateway gives up on them; past it they change nothing. The gateway
// knows the store's clock only from replies: a reply carrying the store's time S, read at local time L,
// says the store's clock is at least S when the local clock reads L (S was taken before the reply left).
// So `local give-up time + (S - L)` is never later than the store's clock at give-up: a script that runs
// before it ran while the gateway was still waiting, and one that runs after it did nothing. Clock drift
// between two replies is negligible next to a command timeout; the offset is refreshed by every reply.
import { MICROS_PER_SECOND } from '../../config/limit-bounds.ts';
import { MICROS_PER_MILLISECOND, monotonicEpochMicros as localMicros } from '../clock.ts';
import type { RedisConnection } from './connection.ts';

export interface StoreClock {
  /** Records the store's time (µs) read from a reply that has just arrived. */
  observe(storeMicros: number): void;
  /**
   * The script argument for a command sent now that is given up on after `timeoutMs`: the store's µs at
   * which it must no longer take effect, or '' while the store's clock is unknown (no reply yet).
   */
  deadlineArg(timeoutMs: number): string;
}

export function createStoreClock(): StoreClock {
  let offsetMicros: number | undefined;
  return {
    observe(storeMicros) {
      offsetMicros = storeMicros - localMicros();
    },
    deadlineArg(timeoutMs) {
      if (offsetMicros === undefined) return '';
      return String(localMicros() + offsetMicros + timeoutMs * MICROS_PER_MILLISECOND);
    },
  };
}

/** The µs in a reply of Redis TIME. */
export function microsOfTime(reply: readonly [string, string]): number {
  return Number(reply[0]) * MICROS_PER_SECOND + Number(reply[1]);
}

/** Learns the store's clock with TIME each time `connection` is (re)connected, before any deadline. */
export function learnClockOnConnect(connection: RedisConnection, clock: StoreClock): void {
  const learn = () => {
    connection.time().then(
      (reply) => {
        clock.observe(microsOfTime(reply as unknown as [string, string]));
      },
      // Nothing to learn from a failed TIME; the next reply with the store's time teaches it.
      () => undefined,
    );
  };
  connection.on('ready', learn);
  if (connection.status === 'ready') learn();
}
