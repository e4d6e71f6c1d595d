// Every call the Redis store makes goes through here, so the rate limiter, request ownership, admission
// and usage fail the same way: while the breaker is open a call is not sent at all; a sent call is bounded
// by the command deadline, timed and counted (gengate_store_operation_duration_seconds and _errors_total)
// under its operation, and a failure trips the breaker once, whoever made the call. The caller says what
// to answer instead (its fallback), knowing whether the store may have run the call.
import { performance } from 'node:perf_hooks';
import type { ObserveStore, StoreOperation } from '../metrics.ts';
import type { StoreBreaker, StoreFailMode } from './circuit-breaker.ts';
import { commandDeadline, isReplyError, type RedisConnection, type StoreLogger } from './connection.ts';
import { commandArgs, defineScripts, type ScriptArg, type StoreScript } from './scripts.ts';
import { createCommandSender, type TurnSchedule } from './send-per-turn.ts';
import { createStoreClock, type StoreClock } from './store-clock.ts';

// Store writes that could not be sent or confirmed are undone once the store answers again.
// A create the gateway refused must leave no claim and no charge behind (docs/ownership.md,
// docs/rate-limits.md), but when the store times out the gateway cannot know whether its admission ran, and
// while the breaker is open it cannot send the release of a claim either. Each such case leaves an undo here:
// a store call that is harmless when there is nothing to undo (it checks the attempt's token, or that the
// claim is still this tenant's pending one). When the breaker closes, the undos are sent before anything else
// uses the store again (listeners run as the breaker closes, and one connection runs commands in order), so a
// client retrying the same requestId after the recovery is admitted at once. Deadlines (store-clock.ts) make
// sure that the command given up on cannot run after its undo: by the time an undo can run, the original
// either ran in time or never takes effect.
type Undo = () => Promise<unknown>;

interface UndoOnRecovery {
  /** Runs `undo` as soon as the store answers: at once when the breaker is closed, else when it closes. */
  add(undo: Undo): void;
}

function createUndoOnRecovery(breaker: StoreBreaker, logger: StoreLogger): UndoOnRecovery {
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
  };
}

export interface StoreCallsOptions {
  /** The connection's breaker, shared by every user of the connection. */
  breaker: StoreBreaker;
  commandTimeoutMs: number;
  failMode: StoreFailMode;
  logger: StoreLogger;
  observeStore?: ObserveStore;
  /** The store's clock as replies show it; a fresh one by default. */
  clock?: StoreClock;
}

export interface StoreCalls {
  readonly connection: RedisConnection;
  readonly breaker: StoreBreaker;
  readonly failMode: StoreFailMode;
  readonly logger: StoreLogger;
  /** The store's clock as replies show it, shared by the connection's users (deadlines). */
  readonly clock: StoreClock;
  /** Where calls given up on wait to be undone once the store answers. */
  readonly undos: UndoOnRecovery;
  /** When calls batched per turn are sent; undefined on a Cluster (send-per-turn.ts). */
  readonly turn: TurnSchedule | undefined;
  /** A command in this turn's write; its reply. Not bounded: run it inside `attempt`. */
  send(command: string, args: readonly ScriptArg[]): Promise<unknown>;
  /**
   * A script with the KEYS and ARGV its typed function builds from `input`; its reply. Throws when the
   * script ran past its deadline and changed nothing.
   */
  run<Input>(definition: StoreScript<Input>, input: Input): Promise<unknown>;
  /** The deadline argument of a call sent now (store-clock.ts). */
  deadlineArg(): string;
  /**
   * `call`'s value; or, when the breaker is open or the call fails, `fallback`'s, told whether the call
   * was sent (the store may have run it, or may still). A failure trips the breaker unless `storeIsFine`
   * says the store answered (Redis refusing a command on one damaged key, say).
   */
  attempt<T, F>(
    operation: StoreOperation,
    call: () => Promise<T>,
    fallback: (sent: boolean) => F | Promise<F>,
    storeIsFine?: (error: unknown) => boolean,
  ): Promise<T | F>;
}

/** Call before anything else listens to `breaker`: undos go out first when the store answers again. */
export function createStoreCalls(connection: RedisConnection, options: StoreCallsOptions): StoreCalls {
  const { breaker, commandTimeoutMs, failMode, logger, observeStore } = options;
  const clock = options.clock ?? createStoreClock();
  const undos = createUndoOnRecovery(breaker, logger);
  const bounded = commandDeadline(connection, commandTimeoutMs);
  const { send, turn } = createCommandSender(connection);
  defineScripts(connection);

  breaker.onChange((open) => {
    if (open) logger.warn({ failMode }, 'store failing; bypassing it until it answers');
    else logger.info({}, 'store answering again');
  });

  return {
    connection,
    breaker,
    failMode,
    logger,
    clock,
    undos,
    turn,
    send,
    async run(definition, input) {
      const reply = await send(definition.command, commandArgs(definition, input));
      // {'expired', the store's µs}: the call reached the store after the gateway gave up on it.
      if (!Array.isArray(reply) || reply[0] !== 'expired') return reply;
      if (typeof reply[1] === 'number') clock.observe(reply[1]);
      throw new Error('the store ran the call after its deadline; it changed nothing');
    },
    deadlineArg: () => clock.deadlineArg(commandTimeoutMs),
    async attempt(operation, call, fallback, storeIsFine) {
      if (breaker.open) return fallback(false);
      const started = performance.now();
      let value;
      try {
        value = await bounded(call());
      } catch (error) {
        observeStore?.(operation, (performance.now() - started) / 1000, true);
        // Calls in flight when the store failed all land here; only the first one reports it.
        if (storeIsFine?.(error) !== true && breaker.trip()) {
          logger.warn(
            { operation, err: error instanceof Error ? error.message : String(error) },
            'store call failed',
          );
        }
        return fallback(true);
      }
      observeStore?.(operation, (performance.now() - started) / 1000, false);
      return value;
    },
  };
}
