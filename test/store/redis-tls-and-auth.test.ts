// TLS and passwords to Redis, against real redis-server processes (test/support/tls-redis.ts): a single
// Redis behind rediss:// whose certificate a CA made with openssl signed, and a three-master Redis
// Cluster with requirepass and TLS on every port, client and bus. gengate connects with the
// configuration's caFile and passwordFile, and is refused without them.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.ts';
import {
  createRedisConnection,
  redisSecurityOptions,
  waitUntilConnected,
  type RedisConnection,
  type RedisSecurityConfig,
  type StoreLogger,
} from '../../src/store/redis/connection.ts';
import { startTlsRedis, type TlsRedis } from '../support/tls-redis.ts';
import { waitFor } from '../support/wait-for.ts';

const PASSWORD = 'cluster-password-of-the-test';
const CONNECT_WAIT_MS = 10_000;

let scratch: string;
const connections: RedisConnection[] = [];

/** The warnings a connection logs, so a refusal is awaited by its cause. */
function recordingLogger(): StoreLogger & { warnings: string[] } {
  const warnings: string[] = [];
  return {
    warnings,
    info: () => undefined,
    warn: (details: object) => {
      warnings.push(String((details as { err?: unknown }).err));
    },
  };
}

async function connect(
  address: { url: string } | { nodes: { host: string; port: number }[] },
  security: RedisSecurityConfig,
  logger?: StoreLogger,
): Promise<RedisConnection> {
  const connection = createRedisConnection(
    {
      ...address,
      keyPrefix: 'gengate:',
      commandTimeoutMs: 2_000,
      security: await redisSecurityOptions(security),
    },
    logger,
  );
  connections.push(connection);
  return connection;
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'gengate-redis-tls-'));
});

afterAll(async () => {
  for (const connection of connections) connection.disconnect();
  await rm(scratch, { recursive: true, force: true });
});

describe('a single Redis behind rediss://', () => {
  let redis: TlsRedis;
  let url: string;
  beforeAll(async () => {
    redis = await startTlsRedis({ cluster: false });
    url = `rediss://127.0.0.1:${redis.ports[0]!}/0`;
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('is reached with the CA of store.redis.tls.caFile', async () => {
    const connection = await connect({ url }, { tls: { caFile: redis.certificates.caFile } });
    await waitUntilConnected(connection, CONNECT_WAIT_MS);
    await connection.set('tls-probe', 'reached');
    expect(await connection.get('tls-probe')).toBe('reached');
  });

  it("is refused without that CA: the server's certificate is not trusted", async () => {
    const logger = recordingLogger();
    const connection = await connect({ url }, {}, logger);
    await waitFor('the refusal to be logged', () => logger.warnings.length > 0);
    expect(logger.warnings).toEqual(['self-signed certificate in certificate chain']);
    expect(connection.status).not.toBe('ready');
  });

  it("is refused when serverName is not a name of the server's certificate", async () => {
    const logger = recordingLogger();
    const connection = await connect(
      { url },
      { tls: { caFile: redis.certificates.caFile, serverName: 'redis.elsewhere.example' } },
      logger,
    );
    await waitFor('the refusal to be logged', () => logger.warnings.length > 0);
    expect(logger.warnings[0]).toMatch(/^Hostname\/IP does not match certificate's altnames/);
    expect(connection.status).not.toBe('ready');
  });
});

describe('a Redis Cluster with requirepass and TLS', () => {
  let cluster: TlsRedis;
  let passwordFile: string;

  beforeAll(async () => {
    cluster = await startTlsRedis({ cluster: true, password: PASSWORD });
    passwordFile = join(scratch, 'redis-password');
    // As a mounted Secret often holds it: with a final newline, which is not part of the password.
    await writeFile(passwordFile, `${PASSWORD}\n`);
  });
  afterAll(async () => {
    await cluster.stop();
  });

  it('is reached with store.redis.passwordFile and tls.caFile, on every master', async () => {
    const connection = await connect(
      { nodes: cluster.nodes },
      { passwordFile, tls: { caFile: cluster.certificates.caFile } },
    );
    await waitUntilConnected(connection, CONNECT_WAIT_MS);
    // Keys in slots of every master.
    const keys = Array.from({ length: 30 }, (_, index) => `{tenant:t${index}}:probe`);
    await Promise.all(keys.map((key) => connection.set(key, 'reached')));
    expect(await Promise.all(keys.map((key) => connection.get(key)))).toEqual(keys.map(() => 'reached'));
    const keyCounts = await Promise.all(cluster.ports.map((_, index) => cluster.client(index).dbsize()));
    expect(keyCounts.every((count) => count > 0)).toBe(true);
  });

  it('is refused without the password', async () => {
    const logger = recordingLogger();
    const connection = await connect(
      { nodes: cluster.nodes },
      { tls: { caFile: cluster.certificates.caFile } },
      logger,
    );
    await waitFor('the refusal to be logged', () => logger.warnings.length > 0);
    // ioredis reports a Cluster it cannot read the slots of, whatever each node answered (NOAUTH here).
    expect(logger.warnings).toEqual(['Failed to refresh slots cache.']);
    expect(connection.status).not.toBe('ready');
  });
});

describe('the configuration', () => {
  it('refuses at start a passwordFile or caFile that cannot be read or is empty, naming each', async () => {
    const empty = join(scratch, 'empty-password');
    await writeFile(empty, '\n');
    const absent = join(scratch, 'no-such-ca.crt');
    const text = [
      'store:',
      '  redis:',
      `    passwordFile: ${empty}`,
      `    tls: { caFile: ${absent} }`,
      '',
    ].join('\n');
    const error: unknown = await parseConfigText(text, {
      env: {},
      baseDir: scratch,
      credentialChecks: 'all',
    }).catch((rejection: unknown) => rejection);
    expect(error).toMatchObject({
      name: 'ConfigError',
      problems: [
        { path: 'store.redis.passwordFile', message: `${empty}: the file is empty` },
        { path: 'store.redis.tls.caFile', message: `${absent}: cannot read the file (ENOENT)` },
      ],
    });
    // check-config --skip-credentials, for a pipeline that renders the file without its secrets.
    await expect(
      parseConfigText(text, { env: {}, baseDir: scratch, credentialChecks: 'none' }),
    ).resolves.toBeDefined();
  });
});
