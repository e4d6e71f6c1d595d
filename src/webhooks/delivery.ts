// What one delivery is, what it sends, and what an attempt's result means for it. Both queues
// (src/webhooks/queue/) run attempts through `attemptDelivery`, so they retry, give up and disable alike.
import { createHash } from 'node:crypto';
import type { Webhook } from 'standardwebhooks';
import type { AttemptResult, SendOptions } from './send.ts';
import { sendAttempt } from './send.ts';

import type { WEBHOOK_EVENTS } from '../config/schema.ts';

export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** One event for one webhook; `id` is the `webhook-id`, the same on every attempt. */
export interface Delivery {
  id: string;
  tenant: string;
  webhookId: string;
  url: string;
  event: WebhookEvent;
  requestId: string;
  route: string;
  /** When the job ended (RFC 3339): the payload's `timestamp`. */
  endedAt: string;
  /** The upstream's final poll answer as received, or null when there is none (expired). */
  record: string | null;
  /** When the delivery was queued (or queued again by a redelivery), epoch ms: its give-up clock. */
  queuedAt: number;
}

/** What a tenant sees of a delivery. */
export interface DeliveryView {
  id: string;
  webhookId: string;
  event: WebhookEvent;
  requestId: string;
  attempts: number;
  /** The last attempt's HTTP status, or why it got none (`timeout`, `connection`, `refused:<reason>`). */
  lastStatus: number | string | null;
  nextAttemptAt: string | null;
  dead: boolean;
}

export interface RetrySchedule {
  firstDelayMs: number;
  maxDelayMs: number;
  giveUpAfterSeconds: number;
}

/**
 * The body: the record's text is spliced in as received, so its numbers keep the digits the upstream
 * wrote (a parse and re-serialisation would round a 19-digit integer).
 */
function payloadOf(delivery: Delivery): string {
  const head = JSON.stringify({
    type: delivery.event,
    timestamp: delivery.endedAt,
    data: { tenant: delivery.tenant, requestId: delivery.requestId, route: delivery.route },
  });
  // `head` ends with `}}`: the record goes in as the last member of `data`.
  return `${head.slice(0, -2)},"record":${delivery.record ?? 'null'}}}`;
}

/** The Standard Webhooks headers of one attempt, one signature per signing secret. */
function signedHeaders(
  signers: readonly Webhook[],
  id: string,
  body: string,
  at: Date,
): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signers.map((signer) => signer.sign(id, at, body)).join(' '),
  };
}

// Jitter drawn from the delivery id and the attempt number rather than a random source, so that every
// replica computes the same delay for the same failure (the queue's retry and the give-up decision agree).
function jitterFraction(id: string, failures: number): number {
  return createHash('sha256').update(`${id}:${failures}`).digest().readUInt32BE(0) / 2 ** 32;
}

/** The wait after the `failures`-th failed attempt: exponential, capped, with "equal jitter". */
function retryDelayMs(schedule: RetrySchedule, id: string, failures: number): number {
  const exponential = Math.min(schedule.maxDelayMs, schedule.firstDelayMs * 2 ** Math.min(failures - 1, 40));
  return Math.round(exponential / 2 + (exponential / 2) * jitterFraction(id, failures));
}

export type AttemptOutcome =
  | { result: 'delivered'; lastStatus: number }
  | { result: 'disabled'; lastStatus: number }
  | { result: 'retried' | 'refused'; lastStatus: number | string; retryInMs: number }
  | { result: 'dead'; lastStatus: number | string; refused: boolean };

export interface AttemptContext {
  send: SendOptions;
  schedule: RetrySchedule;
  signersOf(tenant: string, webhookId: string): readonly Webhook[];
}

function statusOf(result: AttemptResult): number | string {
  if (result.kind === 'answered') return result.status;
  return result.kind === 'refused' ? `refused:${result.reason}` : result.reason;
}

/** Makes attempt number `failures + 1` and says what follows from its result. */
export async function attemptDelivery(
  delivery: Delivery,
  failures: number,
  context: AttemptContext,
  now: () => number = Date.now,
): Promise<AttemptOutcome> {
  const body = payloadOf(delivery);
  const headers = signedHeaders(
    context.signersOf(delivery.tenant, delivery.webhookId),
    delivery.id,
    body,
    new Date(now()),
  );
  const result = await sendAttempt(new URL(delivery.url), headers, body, context.send);
  const lastStatus = statusOf(result);
  if (result.kind === 'answered' && result.status >= 200 && result.status < 300) {
    return { result: 'delivered', lastStatus: result.status };
  }
  if (result.kind === 'answered' && result.status === 410) return { result: 'disabled', lastStatus: 410 };
  // Retried for at least giveUpAfterSeconds: the last wait is cut short to end at that moment, and only an
  // attempt failing from then on makes the delivery dead.
  const giveUpInMs = delivery.queuedAt + context.schedule.giveUpAfterSeconds * 1000 - now();
  if (giveUpInMs <= 0) return { result: 'dead', lastStatus, refused: result.kind === 'refused' };
  const retryInMs = Math.min(retryDelayMs(context.schedule, delivery.id, failures + 1), giveUpInMs);
  return { result: result.kind === 'refused' ? 'refused' : 'retried', lastStatus, retryInMs };
}
