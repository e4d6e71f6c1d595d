// Webhook configuration: ids unique per tenant, URLs that are http(s) URLs, secrets that exist and are
// Standard Webhooks secrets; each problem named by its path, as every configuration problem is. The
// destination warnings check-config prints are logged by the service at start and on reload.
import { Registry } from 'prom-client';
import { expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.ts';
import { openWebhookQueue } from '../../src/store/webhook-queue.ts';
import type { SecretLogger } from '../../src/webhooks/secrets.ts';
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

/** The webhook service of a loaded configuration, as the gateway opens it, with these variables. */
const openService = (
  loaded: Awaited<ReturnType<typeof config>>,
  env: NodeJS.ProcessEnv,
  logger?: SecretLogger,
) =>
  openWebhookService({
    webhooks: loaded.webhooks,
    openQueue: (step) => openWebhookQueue(loaded.store, step),
    tenants: loaded.tenants,
    registry: new Registry(),
    env,
    baseDir: process.cwd(),
    ...(logger === undefined ? {} : { logger }),
  });

it('refuses a webhook id used twice in a tenant and a url that is not an http(s) URL', async () => {
  await expect(
    config(`
      - { id: done, url: "https://a.example/hook", secret: { env: S }, events: [job.completed] }
      - { id: done, url: "http://[::1/hook", secret: { env: S }, events: [job.failed] }
      - { id: other, url: "ftp://a.example/", secret: { env: S }, events: [job.failed] }`),
  ).rejects.toMatchObject({
    // All in one pass: the third webhook's shape problem no longer hides the second's problems.
    problems: [
      { path: 'tenants[0].webhooks[2].url', message: 'must be an http or https URL' },
      { path: 'tenants[0].webhooks[1].id', message: 'webhook id "done" is used twice in tenant "team-a"' },
      { path: 'tenants[0].webhooks[1].url', message: 'must be an http or https URL' },
    ],
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

// A URL's scheme is case-insensitive (RFC 3986): refusing `HTTPS://` would refuse an https URL.
it('accepts an http(s) URL whose scheme is written in capitals', async () => {
  const loaded = await config(`
      - { id: done, url: "HTTPS://A.example/hook", secret: { env: S }, events: [job.completed] }`);
  expect(loaded.tenants[0]?.webhooks[0]?.url).toBe('HTTPS://A.example/hook');
  expect(new URL('HTTPS://A.example/hook').protocol).toBe('https:');
});

it('names each webhook whose secret is missing or not a whsec_ secret, and never quotes a secret', async () => {
  const loaded = await config(`
      - { id: one, url: "https://a.example/1", secret: { env: MISSING }, events: [job.completed] }
      - { id: two, url: "https://a.example/2", secret: { env: NOT_A_SECRET }, events: [job.completed] }
      - { id: three, url: "https://a.example/3", secret: { file: /nonexistent/secret }, events: [job.completed] }`);
  const opening = openService(loaded, { NOT_A_SECRET: 'hunter2-plain-password' });
  await expect(opening).rejects.toMatchObject({
    problems: [
      { path: 'tenants[0].webhooks[0].secret', message: 'environment variable MISSING is not set' },
      { path: 'tenants[0].webhooks[1].secret', message: 'not a whsec_<base64> secret' },
      { path: 'tenants[0].webhooks[2].secret', message: 'cannot read the file (ENOENT)' },
    ],
  });
  await expect(opening).rejects.not.toThrow(/hunter2/);
});

it('logs the warnings check-config prints at start and again when a reload brings a refused URL', async () => {
  const loaded = await config(`
      - { id: meta, url: "https://169.254.169.254/latest", secret: { env: S }, events: [job.completed] }`);
  const warned: [object, string][] = [];
  const webhooks = await openService(
    loaded,
    { S: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
    { info: () => undefined, warn: (details, message) => warned.push([details, message]) },
  );
  try {
    const metadata = {
      path: 'tenants[0].webhooks[0].url',
      warning:
        'webhook "meta" of tenant "team-a" will be refused at every attempt: 169.254.169.254 is a link-local, cloud metadata, unspecified, broadcast or multicast address, never a webhook destination',
    };
    expect(warned).toEqual([[metadata, 'webhook destination warning']]);
    const [tenant] = loaded.tenants;
    await webhooks.updateTenants([
      {
        ...tenant!,
        webhooks: [...tenant!.webhooks, { ...tenant!.webhooks[0]!, id: 'plain', url: 'http://[::1]/h' }],
      },
    ]);
    expect(warned.slice(1)).toEqual([
      [metadata, 'webhook destination warning'],
      [
        {
          path: 'tenants[0].webhooks[1].url',
          warning:
            'webhook "plain" of tenant "team-a" will be refused at every attempt: [::1] is a loopback or private address, allowed only through a CIDR listed in webhooks.allowedDestinations',
        },
        'webhook destination warning',
      ],
    ]);
  } finally {
    await webhooks.close();
  }
});
