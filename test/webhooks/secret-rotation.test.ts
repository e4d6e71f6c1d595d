// Secret rotation by file, without a restart: once the secret file is replaced, deliveries verify with
// the new secret; during the overlap they carry both signatures and verify with either; after it, with
// the new one only.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { WebhookService } from '../../src/webhooks/service.ts';
import { waitFor } from '../support/wait-for.ts';
import { startReceiver, verifiesWith, type ReceivedRequest, type Receiver } from './support/receiver.ts';
import { SECRET_A, SECRET_B, openTestService, settlement, tenantWith } from './support/service-harness.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function rotatingService(overlapSeconds: number) {
  const folder = await mkdtemp(join(tmpdir(), 'gengate-webhook-secret-'));
  const file = join(folder, 'secret');
  await writeFile(file, `${SECRET_A}\n`);
  const receiver: Receiver = await startReceiver('127.0.0.1');
  const reloads: string[] = [];
  const warnings: string[] = [];
  const webhooks: WebhookService = await openTestService({
    tenants: [tenantWith('team-a', [{ id: 'done', url: `${receiver.origin}/hook`, secret: { file } }])],
    webhooks: { secretOverlapSeconds: overlapSeconds },
    logger: {
      info: (_details, message) => reloads.push(message),
      warn: (_details, message) => warnings.push(message),
    },
  });
  closers.push(async () => {
    await webhooks.close();
    await receiver.close();
    await rm(folder, { recursive: true, force: true });
  });
  const deliver = async () => {
    const before = receiver.requests.length;
    await webhooks.onJobEnded(settlement('team-a', randomUUID()));
    await waitFor('the delivery', () => receiver.requests.length === before + 1);
    return receiver.requests[before] as ReceivedRequest;
  };
  // Replaced whole, as an editor or a Kubernetes secret mount does.
  const replace = async (value: string) => {
    await writeFile(`${file}.next`, `${value}\n`);
    await rename(`${file}.next`, file);
  };
  const rotate = async () => {
    await replace(SECRET_B);
    await waitFor('the secret to be reloaded', () => reloads.includes('webhook secret reloaded'));
  };
  return { deliver, rotate, replace, warnings };
}

it('during the overlap a delivery verifies with the old secret and with the new one', async () => {
  const { deliver, rotate } = await rotatingService(3_600);
  const before = await deliver();
  expect([verifiesWith(SECRET_A, before), verifiesWith(SECRET_B, before)]).toEqual([true, false]);
  await rotate();
  const during = await deliver();
  expect([verifiesWith(SECRET_A, during), verifiesWith(SECRET_B, during)]).toEqual([true, true]);
  expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
});

it('after the change, with no overlap, deliveries verify with the new secret only', async () => {
  const { deliver, rotate } = await rotatingService(0);
  await rotate();
  const after = await deliver();
  expect([verifiesWith(SECRET_A, after), verifiesWith(SECRET_B, after)]).toEqual([false, true]);
});

// Regression: a value the signing library throws on (base64 of a length no encoder writes) was an
// unhandled rejection in the file watcher, which ends the process.
it('a file replaced with a value that cannot sign is logged, and the last secret keeps signing', async () => {
  const { deliver, replace, warnings } = await rotatingService(0);
  await replace('whsec_abc');
  await waitFor('the warning', () =>
    warnings.includes('webhook secret file unusable; keeping the last secret'),
  );
  const after = await deliver();
  expect(verifiesWith(SECRET_A, after)).toBe(true);
});
