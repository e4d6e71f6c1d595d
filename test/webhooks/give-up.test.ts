// docs/webhooks.md#retries-and-replay: a failing delivery is retried for at least `giveUpAfterSeconds` after it was
// queued, and is dead only once an attempt fails from then on. Regression: it was dead as soon as its next
// wait would end past that moment, up to one `maxDelayMs` early (23 of 24 hours with the defaults).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { attemptDelivery, type AttemptContext, type Delivery } from '../../src/webhooks/delivery.ts';
import { compileDestinations } from '../../src/webhooks/destinations.ts';
import { resolveWithSystem } from '../../src/webhooks/send.ts';
import { answerStatus, startReceiver, type Receiver } from './support/receiver.ts';

const QUEUED_AT = Date.parse('2026-11-26T18:00:00Z');
const GIVE_UP_MS = 30_000;
let failing: Receiver;
let context: AttemptContext;
let delivery: Delivery;

beforeAll(async () => {
  failing = await startReceiver('127.0.0.1', answerStatus(500));
  context = {
    send: {
      judge: compileDestinations({ allowedDestinations: ['127.0.0.1/32'], allowHttp: ['127.0.0.1/32'] }),
      // The URL names an address: nothing is looked up.
      resolveHost: resolveWithSystem,
      timeoutMs: 5_000,
      maxResponseBytes: 64 * 1024,
    },
    schedule: { firstDelayMs: 3_000, maxDelayMs: 3_000, giveUpAfterSeconds: GIVE_UP_MS / 1000 },
    signersOf: () => [],
  };
  delivery = {
    id: 'msg_2f7c1c7e-8d0e-4d1b-9a57-1f2f3c4d5e6f',
    tenant: 'team-a',
    webhookId: 'done',
    url: `${failing.origin}/hook`,
    event: 'job.failed',
    requestId: '2f7c1c7e-8d0e-4d1b-9a57-1f2f3c4d5e6f',
    route: 'images.create',
    endedAt: '2026-11-26T18:00:00.000Z',
    record: null,
    queuedAt: QUEUED_AT,
  };
});

afterAll(async () => {
  await failing.close();
});

/** What follows an attempt that fails `sinceQueuedMs` after the delivery was queued. */
const outcomeAt = (sinceQueuedMs: number) =>
  attemptDelivery(delivery, 5, context, () => QUEUED_AT + sinceQueuedMs);

it('retries a failure shortly before the give-up moment, its wait cut to end at that moment', async () => {
  expect(await outcomeAt(GIVE_UP_MS - 1_300)).toEqual({
    result: 'retried',
    lastStatus: 500,
    retryInMs: 1_300,
  });
  expect(await outcomeAt(GIVE_UP_MS - 1)).toEqual({ result: 'retried', lastStatus: 500, retryInMs: 1 });
});

it('keeps the backoff when the give-up moment is further than the next wait', async () => {
  const outcome = await outcomeAt(10_000);
  expect(outcome).toMatchObject({ result: 'retried', lastStatus: 500 });
  // Equal jitter: between half the capped delay and all of it.
  expect((outcome as { retryInMs: number }).retryInMs).toBeGreaterThanOrEqual(1_500);
  expect((outcome as { retryInMs: number }).retryInMs).toBeLessThanOrEqual(3_000);
});

it('makes a delivery dead only when an attempt fails at or after the give-up moment', async () => {
  expect(await outcomeAt(GIVE_UP_MS)).toEqual({ result: 'dead', lastStatus: 500, refused: false });
  expect(await outcomeAt(GIVE_UP_MS + 5_000)).toEqual({ result: 'dead', lastStatus: 500, refused: false });
  // Each of the five outcomes above followed an attempt that reached the receiver.
  expect(failing.requests).toHaveLength(5);
});
