// Webhook configuration: ids unique per tenant, URLs that are http(s) URLs, secrets that exist and are
// Standard Webhooks secrets; each problem named by its path, as every configuration problem is.
import { Registry } from 'prom-client';
import { expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.ts';
import { openWebhookQueue } from '../../src/store/webhook-queue.ts';
import { openWebhookService } from '../../src/webhooks/service.ts';

const config = (webhooks: string) =>
  parseConfigText(
    `
upstream: { credentials: { shared: { env: SHARED_TOKEN } } }
tenants:
  - id: team-a
    credential: shared
    keys: []
    webhooks: ${webhooks}
`,
    { env: { SHARED_TOKEN: 'token' }, baseDir: process.cwd() },
  );

it('refuses a webhook id used twice in a tenant and a url that is not an http(s) URL', async () => {
  await expect(
    config(`
      - { id: done, url: "https://a.example/hook", secret: { env: S }, events: [job.completed] }
      - { id: done, url: "http://[::1/hook", secret: { env: S }, events: [job.failed] }
      - { id: other, url: "ftp://a.example/", secret: { env: S }, events: [job.failed] }`),
  ).rejects.toMatchObject({
    problems: [{ path: 'tenants[0].webhooks[2].url', message: 'must be an http or https URL' }],
  });
  await expect(
    config(`
      - { id: done, url: "https://a.example/hook", secret: { env: S }, events: [job.completed] }
      - { id: done, url: "http://[::1/hook", secret: { env: S }, events: [job.failed] }`),
  ).rejects.toMatchObject({
    problems: [
      { path: 'tenants[0].webhooks[1].id', message: 'webhook id "done" is used twice in tenant "team-a"' },
      { path: 'tenants[0].webhooks[1].url', message: 'must be an http or https URL' },
    ],
  });
});

it('names each webhook whose secret is missing or not a whsec_ secret, and never quotes a secret', async () => {
  const loaded = await config(`
      - { id: one, url: "https://a.example/1", secret: { env: MISSING }, events: [job.completed] }
      - { id: two, url: "https://a.example/2", secret: { env: NOT_A_SECRET }, events: [job.completed] }
      - { id: three, url: "https://a.example/3", secret: { file: /nonexistent/secret }, events: [job.completed] }`);
  const opening = openWebhookService({
    webhooks: loaded.webhooks,
    openQueue: (step) => openWebhookQueue(loaded.store, step),
    tenants: loaded.tenants,
    registry: new Registry(),
    env: { NOT_A_SECRET: 'hunter2-plain-password' },
    baseDir: process.cwd(),
  });
  await expect(opening).rejects.toMatchObject({
    problems: [
      { path: 'tenants[0].webhooks[0].secret', message: 'environment variable MISSING is not set' },
      { path: 'tenants[0].webhooks[1].secret', message: 'not a whsec_<base64> secret' },
      { path: 'tenants[0].webhooks[2].secret', message: 'cannot read the file (ENOENT)' },
    ],
  });
  await expect(opening).rejects.not.toThrow(/hunter2/);
});
