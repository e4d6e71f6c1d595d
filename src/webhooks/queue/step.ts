// One step of a queued delivery, the same for every queue: skip it for now when its destination is busy,
// finish it when its endpoint is disabled, otherwise attempt it and say when it runs next, if ever.
import type { AttemptContext, AttemptOutcome, Delivery, DeliveryView } from '../delivery.ts';
import { attemptDelivery } from '../delivery.ts';

/** A delivery as a queue keeps it: the event, and what its attempts so far came to. */
export interface QueuedDelivery extends Delivery {
  /** Every attempt made, redeliveries included. */
  attempts: number;
  /** Failed attempts since it was last queued: the retry delay's exponent. */
  failures: number;
  lastStatus: number | string | null;
  nextAttemptAt: number | null;
  dead: boolean;
}

export function queuedDelivery(delivery: Delivery): QueuedDelivery {
  return {
    ...delivery,
    attempts: 0,
    failures: 0,
    lastStatus: null,
    nextAttemptAt: delivery.queuedAt,
    dead: false,
  };
}

/** The delivery queued again by hand: a fresh give-up clock and retry schedule, its history kept. */
export function requeued(delivery: QueuedDelivery, now: number): QueuedDelivery {
  return { ...delivery, queuedAt: now, failures: 0, nextAttemptAt: now, dead: false };
}

export function viewOf(delivery: QueuedDelivery): DeliveryView {
  return {
    id: delivery.id,
    webhookId: delivery.webhookId,
    event: delivery.event,
    requestId: delivery.requestId,
    attempts: delivery.attempts,
    lastStatus: delivery.lastStatus,
    nextAttemptAt: delivery.nextAttemptAt === null ? null : new Date(delivery.nextAttemptAt).toISOString(),
    dead: delivery.dead,
  };
}

/** Whether a webhook endpoint answered 410 Gone; kept where the queue keeps its deliveries. */
export interface EndpointStates {
  isDisabled(delivery: Delivery): Promise<boolean>;
  disable(delivery: Delivery): Promise<void>;
}

/** Attempts at once per destination (host and port), in this process. */
export class DestinationSlots {
  readonly #inUse = new Map<string, number>();
  readonly #perDestination: number;

  constructor(perDestination: number) {
    this.#perDestination = perDestination;
  }

  /** A slot's release, or undefined when the destination has none free. */
  tryAcquire(url: string): (() => void) | undefined {
    const destination = new URL(url).host;
    const used = this.#inUse.get(destination) ?? 0;
    if (used >= this.#perDestination) return undefined;
    this.#inUse.set(destination, used + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#inUse.get(destination) ?? 1) - 1;
      if (left === 0) this.#inUse.delete(destination);
      else this.#inUse.set(destination, left);
    };
  }
}

export type DeliveryResult = AttemptOutcome['result'];

export interface StepDependencies {
  context: AttemptContext;
  slots: DestinationSlots;
  endpoints: EndpointStates;
  /** Called once per attempt (or per delivery finished without one, as `disabled`). */
  observe(delivery: Delivery, result: DeliveryResult, durationSeconds: number | undefined): void;
  now?: () => number;
}

export type Step =
  | { kind: 'busy' }
  | { kind: 'finished'; delivery: QueuedDelivery }
  | { kind: 'retry'; delivery: QueuedDelivery; at: number };

export async function stepDelivery(delivery: QueuedDelivery, deps: StepDependencies): Promise<Step> {
  const now = deps.now ?? Date.now;
  if (await deps.endpoints.isDisabled(delivery)) {
    deps.observe(delivery, 'disabled', undefined);
    return { kind: 'finished', delivery: { ...delivery, dead: true, nextAttemptAt: null, lastStatus: 410 } };
  }
  const release = deps.slots.tryAcquire(delivery.url);
  if (release === undefined) return { kind: 'busy' };
  const started = performance.now();
  let outcome: AttemptOutcome;
  try {
    outcome = await attemptDelivery(delivery, delivery.failures, deps.context, now);
  } finally {
    release();
  }
  deps.observe(delivery, outcome.result, (performance.now() - started) / 1000);
  const attempted = { ...delivery, attempts: delivery.attempts + 1, lastStatus: outcome.lastStatus };
  switch (outcome.result) {
    case 'delivered':
      return { kind: 'finished', delivery: { ...attempted, nextAttemptAt: null } };
    case 'disabled':
      await deps.endpoints.disable(delivery);
      return { kind: 'finished', delivery: { ...attempted, nextAttemptAt: null, dead: true } };
    case 'dead':
      return { kind: 'finished', delivery: { ...attempted, nextAttemptAt: null, dead: true } };
    case 'retried':
    case 'refused': {
      const at = now() + outcome.retryInMs;
      return {
        kind: 'retry',
        at,
        delivery: { ...attempted, failures: delivery.failures + 1, nextAttemptAt: at },
      };
    }
  }
}
