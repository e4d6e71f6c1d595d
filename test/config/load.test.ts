import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfigText, type ConfigProblem } from '../../src/config/load.ts';

const HASH_A = 'a'.repeat(64);
const HASH_B = 'b'.repeat(64);
const BASE_DIR = '/etc/gengate';
const TOKENS = { MAXAI_TOKEN: 'token-shared', RESEARCH_TOKEN: 'token-research' };

const CREDENTIALS = `
upstream:
  credentials:
    shared: { env: MAXAI_TOKEN }
    research: { env: RESEARCH_TOKEN }
`;

function parse(text: string, env: NodeJS.ProcessEnv = TOKENS) {
  return parseConfigText(text, { env, baseDir: BASE_DIR });
}

async function problemsOf(text: string, env: NodeJS.ProcessEnv = TOKENS): Promise<readonly ConfigProblem[]> {
  const error: unknown = await parse(text, env).then(
    () => undefined,
    (rejection: unknown) => rejection,
  );
  if (!(error instanceof ConfigError)) throw new Error(`expected a ConfigError, got ${String(error)}`);
  return error.problems;
}

describe('loadConfig', () => {
  let folder: string;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'gengate-config-'));
  });
  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  it('loads the demo configuration, with credential files resolved from its folder', async () => {
    const config = await loadConfig('config/demo.yaml', {});
    expect(config.tenants.map((tenant) => tenant.id)).toEqual(['studio', 'lab']);
    expect(config.upstream.credentials).toEqual({
      shared: { file: resolve('config/demo-secrets/shared.token') },
      research: { file: resolve('config/demo-secrets/research.token') },
    });
    expect(config.simulator).toEqual({
      enabled: true,
      host: '127.0.0.1',
      port: 8090,
      queuedMs: 1500,
      processingMs: 2500,
      requestsPerMinute: 600,
    });
    expect(config.store.kind).toBe('memory');
  });

  it('loads the production example when its environment variable is set', async () => {
    const config = await loadConfig('config/example.yaml', { MAXAI_TOKEN: 'token' });
    expect(config.tenants.map((tenant) => [tenant.id, tenant.account])).toEqual([
      ['storefront', 'gateway'],
      ['research', 'passthrough'],
    ]);
    expect(config.tenants[0]?.keys[0]?.expiresAt).toBe('2027-06-30T00:00:00.000Z');
  });

  it('reports a missing file as a problem of that path', async () => {
    const path = join(folder, 'absent.yaml');
    await expect(loadConfig(path, {})).rejects.toMatchObject({
      problems: [{ path, message: 'cannot read the configuration file: no such file' }],
    });
  });

  it('resolves relative credential files from the folder of the file', async () => {
    const path = join(folder, 'relative.yaml');
    await writeFile(path, 'upstream: { credentials: { shared: { file: secrets/token } } }\n');
    const config = await loadConfig(path, {});
    expect(config.upstream.credentials).toEqual({ shared: { file: join(folder, 'secrets/token') } });
  });
});

describe('parseConfigText', () => {
  it('fills in every default and returns a deeply frozen configuration', async () => {
    const config = await parse(`${CREDENTIALS}
tenants:
  - id: team-a
    credential: shared
    keys: [{ sha256: "${HASH_A}", prefix: ggk_Ab3d }]
`);
    expect(config).toEqual({
      server: {
        host: '0.0.0.0',
        port: 8080,
        bodyLimitBytes: 10485760,
        trustProxy: false,
        requestTimeoutMs: 120000,
        keepAliveTimeoutMs: 72000,
        drainTimeoutMs: 30000,
        maxConnections: 10000,
        listenBacklog: 4096,
        sendTimeoutMs: 30000,
        maxBytesInFlight: 100663296,
        maxRequestsPerSocket: 1000,
        overload: {
          maxEventLoopDelayMs: 200,
          maxHeapUsedRatio: 0.9,
          retryAfterSeconds: 1,
          maxRssRatio: 0.85,
          maxRssBytes: 0,
          maxQueueWaitMs: 250,
        },
        authenticationFailures: { limit: 20, windowSeconds: 60 },
      },
      admin: { host: '0.0.0.0', port: 9090, maxConnections: 64 },
      logging: { level: 'info', prompts: false },
      pricing: { images: [], videoUsdPerSecond: { '480p': 0.0062, '720p': 0.014, '1080p': 0.031 } },
      jobs: {
        leaseMs: 30000,
        maxAgeSeconds: 86400,
        maxPollsPerSecondPerCredential: 5,
        firstPollMs: 1000,
        maxPollIntervalMs: 30000,
      },
      upstream: {
        baseUrl: 'https://api.maxai.lol',
        timeoutMs: 60000,
        connections: 256,
        queueTimeoutMs: 500,
        maxTenantShare: 0.5,
        maxResponseBytes: 67108864,
        credentials: { shared: { env: 'MAXAI_TOKEN' }, research: { env: 'RESEARCH_TOKEN' } },
      },
      simulator: {
        enabled: false,
        host: '127.0.0.1',
        port: 8090,
        queuedMs: 1500,
        processingMs: 2500,
        requestsPerMinute: 600,
      },
      store: {
        kind: 'redis',
        redis: { url: 'redis://127.0.0.1:6379/0', keyPrefix: 'gengate:', commandTimeoutMs: 100 },
        failMode: 'open',
        replicas: 1,
        ownershipTtlSeconds: 604800,
      },
      tenants: [
        {
          id: 'team-a',
          credential: 'shared',
          keys: [{ sha256: HASH_A, prefix: 'ggk_Ab3d' }],
          account: 'gateway',
          policy: { mode: 'enforce' },
          limits: [],
          webhooks: [],
        },
      ],
      webhooks: {
        allowedDestinations: [],
        allowHttp: [],
        timeoutMs: 10000,
        retry: { firstDelayMs: 5000, maxDelayMs: 3600000, giveUpAfterSeconds: 86400 },
        concurrencyPerDestination: 4,
        secretOverlapSeconds: 3600,
      },
    });
    expect(Object.isFrozen(config.tenants[0]?.keys[0])).toBe(true);
    expect(() => {
      (config.server as { port: number }).port = 1;
    }).toThrow(TypeError);
  });

  it('applies the defaults inside optional policy members', async () => {
    const config = await parse(`${CREDENTIALS}
tenants:
  - id: team-a
    credential: shared
    keys: []
    policy: { safetyLevel: { minimum: high }, samples: { maximum: 4 }, models: { allow: ["vendor@*"] }, video: {} }
`);
    expect(config.tenants[0]?.policy).toEqual({
      mode: 'enforce',
      safetyLevel: { minimum: 'high', onViolation: 'raise' },
      samples: { maximum: 4, onViolation: 'clamp' },
      models: { allow: ['vendor@*'], allowServiceDefault: true },
      video: { enabled: true },
    });
  });

  it('refuses an empty document (docs/configuration.md#the-file-as-a-whole): empty, blank, comments only, or null', async () => {
    for (const text of ['', '  \n\n', '# everything is commented out\n# tenants: []\n', '~\n']) {
      expect(await problemsOf(text, {})).toEqual([{ path: '(root)', message: 'the configuration is empty' }]);
    }
  });

  it('accepts a document that leaves every section to its defaults', async () => {
    const config = await parse('tenants: []\n', {});
    expect(config.tenants).toEqual([]);
    expect(config.upstream.credentials).toEqual({});
  });

  it('lists every problem of a bad file, each with its path and a plain reason', async () => {
    expect(
      await problemsOf(`
server: { port: "8080", foo: 1, trustProxy: 3 }
upstream:
  baseUrl: https://api.maxai.lol/v1
  credentials:
    shared: { env: MAXAI_TOKEN, file: token }
    "a b": { env: X }
store: { kind: disk }
tenants:
  - id: Team_A
    credential: shared
    keys:
      - { sha256: abc, prefix: ggk_Ab3d, expiresAt: 2027-02-30T00:00:00Z }
    policy: { mode: maybe, samples: { maximum: 40 }, outputTypes: [] }
    limits:
      - { id: a, routes: [images.nope], cost: requests, limit: 0, windowSeconds: 90000 }
  - { id: team-b, keys: [] }
`),
    ).toEqual([
      { path: 'server', message: 'unknown key "foo"' },
      { path: 'server.port', message: 'must be an integer' },
      { path: 'server.trustProxy', message: 'must be true or false, an address or CIDR, or a list of them' },
      {
        path: 'upstream.baseUrl',
        message:
          'must be an http or https URL without a path, query or user name (the gateway appends /v1/...)',
      },
      {
        path: 'upstream.credentials',
        message: 'invalid name "a b": names are 1 to 63 letters, digits, "-" or "_"',
      },
      {
        path: 'upstream.credentials.shared',
        message: 'must be exactly one of { env: VARIABLE_NAME } or { file: PATH }',
      },
      { path: 'store.kind', message: 'must be one of redis, memory' },
      {
        path: 'tenants[0].id',
        message: 'must be 1 to 63 lowercase letters, digits or "-", starting with a letter or digit',
      },
      { path: 'tenants[0].keys[0].sha256', message: 'must be 64 lowercase hexadecimal characters' },
      {
        path: 'tenants[0].keys[0].expiresAt',
        message: 'must be an RFC 3339 date and time, e.g. 2027-06-30T00:00:00Z',
      },
      { path: 'tenants[0].policy.mode', message: 'must be one of enforce, shadow' },
      { path: 'tenants[0].policy.samples.maximum', message: 'must be at most 20' },
      { path: 'tenants[0].policy.outputTypes', message: 'must list at least 1 item' },
      {
        path: 'tenants[0].limits[0].routes[0]',
        message:
          'must be one of images.create, images.get, videos.create, videos.get, videos.delete, account.usage, account.keys, webhooks.deliveries, webhooks.redeliver, *',
      },
      { path: 'tenants[0].limits[0].limit', message: 'must be at least 1' },
      { path: 'tenants[0].limits[0].windowSeconds', message: 'must be at most 86400' },
      { path: 'tenants[1].credential', message: 'is required' },
    ]);
  });

  // Regression: a mistake in one member of a tenant hid the problems of its other members, and of every
  // check across tenants that read it, until the first was fixed.
  it("lists a tenant's problems in one pass, whichever of its members has a shape problem", async () => {
    expect(
      await problemsOf(`
upstream: { credentials: { shared: { env: MAXAI_TOKEN } } }
pricing: { images: [{ model: "vendor@*", usdPerSample: 0.01 }] }
tenants:
  - id: team-a
    credential: shared
    keys: []
    account: passthrough
    policy: { models: { allow: ["bad glob"] } }
    budget: { dailyUsd: 5 }
    limits: [{ id: r, routes: ["*"], cost: bogus, limit: 1, windowSeconds: 60 }]
  - id: team-b
    credential: shared
    keys: []
`),
    ).toEqual([
      {
        path: 'tenants[0].limits[0].cost',
        message: 'must be one of requests, samples, videoSeconds',
      },
      {
        path: 'tenants[0].account',
        message:
          'passthrough needs a credential of its own, but credential "shared" is also used by "team-b"',
      },
      {
        path: 'tenants[0].policy.models.allow[0]',
        message: 'must not contain spaces or control characters',
      },
      {
        path: 'tenants[0].budget',
        message:
          'an image create without model matches no pricing.images entry; a budget needs a price for every create (add a "*" entry, or narrow policy.models)',
      },
    ]);
  });

  it('names an unknown key at the top level', async () => {
    expect(await problemsOf('servers: { port: 8080 }\n')).toEqual([
      { path: '(root)', message: 'unknown key "servers"' },
    ]);
  });

  it('replaces ${NAME} in string values, keeps $${ literal, and names each missing variable and its path', async () => {
    const config = await parse(
      'store: { redis: { url: "redis://${REDIS_HOST}:6379/0", keyPrefix: "$${app}:" } }\n',
      {
        REDIS_HOST: 'cache.internal',
      },
    );
    expect(config.store.redis).toEqual({
      url: 'redis://cache.internal:6379/0',
      keyPrefix: '${app}:',
      commandTimeoutMs: 100,
    });

    expect(
      await problemsOf(
        'admin: { host: "${ADMIN_HOST}" }\nlogging: { level: "${LEVEL}" }\nserver: { host: "${1x}" }\n',
        {},
      ),
    ).toEqual([
      { path: 'admin.host', message: 'environment variable ADMIN_HOST is not set' },
      { path: 'logging.level', message: 'environment variable LEVEL is not set' },
      { path: 'server.host', message: '"${1x}" is not a valid variable reference' },
      { path: 'logging.level', message: 'must be one of fatal, error, warn, info, debug, trace, silent' },
    ]);
  });

  it('lets REDIS_URL override store.redis.url, and validates it like the file', async () => {
    const config = await parse('store: { redis: { url: redis://file:6379/0 } }\n', {
      REDIS_URL: 'rediss://env:6380/1',
    });
    expect(config.store.redis.url).toBe('rediss://env:6380/1');
    const withoutStore = await parse('tenants: []\n', { REDIS_URL: 'redis://env:6379/2' });
    expect(withoutStore.store.redis.url).toBe('redis://env:6379/2');
    expect(await problemsOf('tenants: []\n', { REDIS_URL: 'http://env' })).toEqual([
      {
        path: 'store.redis.url',
        message: 'must be a redis:// or rediss:// URL (from the environment: REDIS_URL)',
      },
    ]);
  });

  // Regression: such URLs passed, then the store crashed the gateway at start (`TypeError: Invalid URL`) or
  // its first command (`select NaN`); check-config said "config OK".
  it('refuses a store Redis URL ioredis cannot use, from the file or REDIS_URL, never quoting it', async () => {
    const PORT = 'the port must be from 1 to 65535';
    const DATABASE = 'the database, the path after the host, must be a non-negative integer';
    const unusable = {
      'redis://:hunter2@127.0.0.1:99999/0': PORT,
      'rediss://127.0.0.1:65536': PORT,
      'redis://:hunter2@[::1]:0/0': PORT,
      'redis://:hunter2@127.0.0.1:6379/abc': DATABASE,
      'redis://127.0.0.1:6379/-1': DATABASE,
      'redis://127.0.0.1:6379/0/1': DATABASE,
      'redis://:hunter2@cache internal:6379/0': 'must be a valid URL',
    };
    for (const [url, reason] of Object.entries(unusable)) {
      expect(await problemsOf(`store: { redis: { url: "${url}" } }\n`)).toEqual([
        { path: 'store.redis.url', message: reason },
      ]);
      expect(await problemsOf('tenants: []\n', { REDIS_URL: url })).toEqual([
        { path: 'store.redis.url', message: `${reason} (from the environment: REDIS_URL)` },
      ]);
    }
    for (const url of ['redis://cache', 'rediss://:hunter2@cache:6380/', 'redis://[::1]:6379/15']) {
      expect((await parse('tenants: []\n', { REDIS_URL: url })).store.redis.url).toBe(url);
    }
  });

  it('lets LOG_LEVEL override logging.level, and names the variable when its value is not a level', async () => {
    expect((await parse('tenants: []\n', { LOG_LEVEL: 'debug' })).logging.level).toBe('debug');
    expect(await problemsOf('logging: { level: info }\n', { LOG_LEVEL: 'verbose' })).toEqual([
      {
        path: 'logging.level',
        message:
          'must be one of fatal, error, warn, info, debug, trace, silent (from the environment: LOG_LEVEL)',
      },
    ]);
  });

  it('types a value that is one ${NAME} alone as the schema asks: digits are an integer, true a boolean', async () => {
    const config = await parse(
      'server: { port: "${PORT}" }\nlogging: { prompts: "${PROMPTS}" }\nstore: { redis: { keyPrefix: "${PREFIX}" } }\n',
      { PORT: '8081', PROMPTS: 'true', PREFIX: '123' },
    );
    expect(config.server.port).toBe(8081);
    expect(config.logging.prompts).toBe(true);
    // A string member keeps digits as the string they are.
    expect(config.store.redis.keyPrefix).toBe('123');
  });

  it('refuses a trustProxy that is no address, CIDR or named range, which Fastify would throw on at start', async () => {
    const server = (trustProxy: string) => `server: { trustProxy: ${trustProxy} }\n`;
    for (const accepted of [
      '"10.0.0.0/8, 127.0.0.1"',
      '[loopback, "fd00::/8", "10.0.0.0/255.0.0.0"]',
      'true',
    ]) {
      await expect(parse(server(accepted))).resolves.toBeDefined();
    }
    for (const refused of ['notanaddress', '[10.0.0.0/33]', '"10.0.0.1/8/1"']) {
      expect(await problemsOf(server(refused))).toEqual([
        {
          path: 'server.trustProxy',
          message: 'must be true or false, an address or CIDR, or a list of them',
        },
      ]);
    }
    // `${TRUST}` holding true is the boolean, not an address named "true".
    expect((await parse(server('"${TRUST}"'), { TRUST: 'true' })).server.trustProxy).toBe(true);
  });

  it('names the variable a wrong value came from, and keeps a partly interpolated value a string', async () => {
    expect(
      await problemsOf('server: { port: "${PORT}" }\nadmin: { port: "9${PORT}" }\n', { PORT: 'eighty' }),
    ).toEqual([
      { path: 'server.port', message: 'must be an integer (from the environment: PORT)' },
      { path: 'admin.port', message: 'must be an integer (from the environment: PORT)' },
    ]);
  });

  it('reports cross-reference problems: tenant ids, key hashes, credentials, limit ids, passthrough, model globs', async () => {
    expect(
      await problemsOf(`${CREDENTIALS}
tenants:
  - id: team-a
    credential: shared
    keys: [{ sha256: "${HASH_A}", prefix: ggk_Aaaa }, { sha256: "${HASH_B}", prefix: ggk_Bbbb }]
    limits:
      - { id: requests, routes: ["*"], cost: requests, limit: 10, windowSeconds: 60 }
      - { id: requests, routes: [images.create], cost: samples, limit: 10, windowSeconds: 60 }
  - id: team-a
    credential: shared
    account: passthrough
    keys: [{ sha256: "${HASH_A}", prefix: ggk_Aaaa }]
    policy: { models: { allow: ["vendor@*", "a b", "x?"], deny: ["a@b@c", "plainname"] } }
  - id: team-c
    credential: missing
    keys: [{ sha256: "${HASH_B}", prefix: ggk_Bbbb }]
`),
    ).toEqual([
      { path: 'tenants[1].id', message: 'tenant id "team-a" is already used by tenants[0]' },
      {
        path: 'tenants[1].keys[0].sha256',
        message: 'the same key hash is already listed at tenants[0].keys[0].sha256',
      },
      {
        path: 'tenants[2].keys[0].sha256',
        message: 'the same key hash is already listed at tenants[0].keys[1].sha256',
      },
      { path: 'tenants[0].limits[1].id', message: 'limit id "requests" is used twice in tenant "team-a"' },
      {
        path: 'tenants[2].credential',
        message: 'unknown credential "missing" (upstream.credentials: configured: shared, research)',
      },
      {
        path: 'tenants[1].account',
        message:
          'passthrough needs a credential of its own, but credential "shared" is also used by "team-a"',
      },
      { path: 'tenants[1].policy.models.allow[1]', message: 'must not contain spaces or control characters' },
      {
        path: 'tenants[1].policy.models.allow[2]',
        message: 'only * is a wildcard; ? [ ] { } ! and \\ are not allowed',
      },
      { path: 'tenants[1].policy.models.deny[0]', message: 'must contain "@" at most once' },
      {
        path: 'tenants[1].policy.models.deny[1]',
        message: 'must be a model id <vendor>@<model_name> or contain the wildcard *',
      },
    ]);
  });

  it('checks the references of the well-formed tenants while others are ill-typed, without tripping over them', async () => {
    expect(
      await problemsOf(`${CREDENTIALS}
tenants:
  - { id: 5, credential: [shared], keys: "none", limits: 3, policy: { models: { allow: 7 } } }
  - not a tenant
  - { id: team-a, credential: archive, keys: [] }
  - { id: team-a, credential: shared, keys: [], colour: blue }
`),
    ).toEqual([
      { path: 'tenants[0].id', message: 'must be a string' },
      { path: 'tenants[0].credential', message: 'must be a string' },
      { path: 'tenants[0].keys', message: 'must be a list' },
      { path: 'tenants[0].policy.models.allow', message: 'must be a list' },
      { path: 'tenants[0].limits', message: 'must be a list' },
      { path: 'tenants[1]', message: 'must be a mapping' },
      { path: 'tenants[3]', message: 'unknown key "colour"' },
      // A mistake elsewhere in a tenant does not hide its duplicate id.
      { path: 'tenants[3].id', message: 'tenant id "team-a" is already used by tenants[2]' },
      {
        path: 'tenants[2].credential',
        message: 'unknown credential "archive" (upstream.credentials: configured: shared, research)',
      },
    ]);
  });

  it('checks the credentials of a section whose other entries are malformed, and only those', async () => {
    expect(
      await problemsOf(
        'upstream:\n  credentials:\n    shared: { env: MAXAI_TOKEN }\n    "a b": { env: X }\n    broken: { env: 7 }\n',
        {},
      ),
    ).toEqual([
      {
        path: 'upstream.credentials',
        message: 'invalid name "a b": names are 1 to 63 letters, digits, "-" or "_"',
      },
      {
        path: 'upstream.credentials.broken',
        message: 'must be exactly one of { env: VARIABLE_NAME } or { file: PATH }',
      },
      { path: 'upstream.credentials.shared.env', message: 'environment variable MAXAI_TOKEN is not set' },
    ]);
  });

  it('accepts passthrough for a tenant whose credential is its own', async () => {
    const config = await parse(`${CREDENTIALS}
tenants:
  - { id: team-a, credential: shared, keys: [] }
  - { id: team-b, credential: research, account: passthrough, keys: [] }
`);
    expect(config.tenants[1]?.account).toBe('passthrough');
  });

  it('requires the environment variable of every env credential', async () => {
    expect(await problemsOf(CREDENTIALS, { MAXAI_TOKEN: '  \n' })).toEqual([
      { path: 'upstream.credentials.shared.env', message: 'environment variable MAXAI_TOKEN is empty' },
      {
        path: 'upstream.credentials.research.env',
        message: 'environment variable RESEARCH_TOKEN is not set',
      },
    ]);
  });

  it('accepts expiresAt quoted, unquoted or with an offset, and normalises it to an ISO string', async () => {
    const config = await parse(`${CREDENTIALS}
tenants:
  - id: team-a
    credential: shared
    keys:
      - { sha256: "${HASH_A}", prefix: ggk_Aaaa, expiresAt: 2027-06-30T00:00:00Z }
      - { sha256: "${HASH_B}", prefix: ggk_Bbbb, expiresAt: "2027-06-30 02:30:00+02:00" }
`);
    expect(config.tenants[0]?.keys.map((key) => key.expiresAt)).toEqual([
      '2027-06-30T00:00:00.000Z',
      '2027-06-30T00:30:00.000Z',
    ]);
  });

  it('refuses duplicate YAML keys, explicit tags, several documents and collection keys', async () => {
    expect(await problemsOf('server:\n  port: 1\n  port: 2\n')).toEqual([
      { path: 'line 3, column 3', message: 'the same key appears twice in one mapping' },
    ]);
    expect(await problemsOf('admin: { host: !!binary aGVsbG8= }\n')).toEqual([
      {
        path: 'line 1, column 25',
        message: 'explicit YAML tags are not allowed (found tag:yaml.org,2002:binary)',
      },
    ]);
    expect(await problemsOf('admin: {}\n---\nadmin: {}\n')).toEqual([
      {
        path: 'line 2, column 1',
        message: 'Source contains multiple documents; please use YAML.parseAllDocuments()',
      },
    ]);
    expect(await problemsOf('? [a, b]\n: 1\n')).toEqual([
      { path: 'line 1, column 3', message: 'keys must be plain names' },
    ]);
  });
});
