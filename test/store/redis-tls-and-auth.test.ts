// TLS and passwords to Redis, against real redis-server processes: a single Redis behind rediss:// whose
// certificate a CA made here with openssl signed, and a three-master Redis Cluster with requirepass and
// TLS on every port, client and bus. gengate connects with the configuration's caFile and passwordFile,
// and is refused without them.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
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
import { freePort } from '../support/free-port.ts';
import { waitFor } from '../support/wait-for.ts';

const execFileAsync = promisify(execFile);

const PASSWORD = 'cluster-password-of-the-test';
const CONNECT_WAIT_MS = 10_000;
// Refusals are awaited by the failure they log, not by a timer: this only bounds waitUntilConnected.
const REFUSED_CONNECT_WAIT_MS = 1_500;
const CLUSTER_SLOTS = 16_384;

let scratch: string;
let certificates: { caFile: string; certFile: string; keyFile: string };
const servers: ChildProcess[] = [];
const connections: RedisConnection[] = [];

/** A CA, and a certificate it signs for 127.0.0.1 and localhost (the server's and the client's). */
async function makeCertificates(folder: string): Promise<typeof certificates> {
  const file = (name: string) => join(folder, name);
  const openssl = (...args: string[]) => execFileAsync('openssl', args, { cwd: folder });
  await openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=gengate test CA',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
  );
  await openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=redis',
    '-keyout',
    file('redis.key'),
    '-out',
    file('redis.csr'),
  );
  await writeFile(file('san.ext'), 'subjectAltName = IP:127.0.0.1, DNS:localhost\n');
  await openssl(
    'x509',
    '-req',
    '-in',
    file('redis.csr'),
    '-CA',
    file('ca.crt'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    file('san.ext'),
    '-out',
    file('redis.crt'),
  );
  return { caFile: file('ca.crt'), certFile: file('redis.crt'), keyFile: file('redis.key') };
}

/** A redis-server on TLS alone (no plain port), clients not asked for certificates. */
async function startTlsRedis(extraArgs: string[] = []): Promise<number> {
  const port = await freePort();
  const dir = await mkdtemp(join(scratch, 'redis-'));
  const child = spawn(
    'redis-server',
    [
      '--port',
      '0',
      '--tls-port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--tls-cert-file',
      certificates.certFile,
      '--tls-key-file',
      certificates.keyFile,
      '--tls-ca-cert-file',
      certificates.caFile,
      '--tls-auth-clients',
      'no',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      ...extraArgs,
    ],
    { stdio: 'ignore' },
  );
  servers.push(child);
  const probe = new Redis({
    port,
    host: '127.0.0.1',
    tls: { ca: await readCa() },
    password: extraArgs.includes('--requirepass') ? PASSWORD : undefined,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => 50,
  });
  probe.on('error', () => undefined);
  try {
    await waitFor(
      `redis-server on TLS port ${port}`,
      async () => (await probe.ping().catch(() => undefined)) === 'PONG',
    );
  } finally {
    probe.disconnect();
  }
  return port;
}

async function readCa(): Promise<string> {
  return readFile(certificates.caFile, 'utf8');
}

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
  certificates = await makeCertificates(scratch);
});

afterAll(async () => {
  for (const connection of connections) connection.disconnect();
  await Promise.all(
    servers.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }),
  );
  await rm(scratch, { recursive: true, force: true });
});

describe('a single Redis behind rediss://', () => {
  let url: string;
  beforeAll(async () => {
    url = `rediss://127.0.0.1:${await startTlsRedis()}/0`;
  });

  it('is reached with the CA of store.redis.tls.caFile', async () => {
    const connection = await connect({ url }, { tls: { caFile: certificates.caFile } });
    await waitUntilConnected(connection, CONNECT_WAIT_MS);
    await connection.set('tls-probe', 'reached');
    expect(await connection.get('tls-probe')).toBe('reached');
  });

  it("is refused without that CA: the server's certificate is not trusted", async () => {
    const logger = recordingLogger();
    const connection = await connect({ url }, {}, logger);
    await expect(waitUntilConnected(connection, REFUSED_CONNECT_WAIT_MS)).rejects.toThrow(
      `store did not answer within ${REFUSED_CONNECT_WAIT_MS} ms`,
    );
    await waitFor('the refusal to be logged', () => logger.warnings.length > 0);
    expect(logger.warnings).toEqual(['self-signed certificate in certificate chain']);
  });

  it("is refused when serverName is not a name of the server's certificate", async () => {
    const logger = recordingLogger();
    const connection = await connect(
      { url },
      { tls: { caFile: certificates.caFile, serverName: 'redis.elsewhere.example' } },
      logger,
    );
    await expect(waitUntilConnected(connection, REFUSED_CONNECT_WAIT_MS)).rejects.toThrow();
    await waitFor('the refusal to be logged', () => logger.warnings.length > 0);
    expect(logger.warnings[0]).toMatch(/^Hostname\/IP does not match certificate's altnames/);
  });
});

describe('a Redis Cluster with requirepass and TLS', () => {
  let nodes: { host: string; port: number }[];
  let passwordFile: string;

  beforeAll(async () => {
    passwordFile = join(scratch, 'redis-password');
    // As a mounted Secret often holds it: with a final newline, which is not part of the password.
    await writeFile(passwordFile, `${PASSWORD}\n`);
    const busPorts = await Promise.all([0, 1, 2].map(() => freePort()));
    const ports = await Promise.all(
      busPorts.map(async (busPort) =>
        startTlsRedis([
          '--cluster-enabled',
          'yes',
          '--cluster-port',
          String(busPort),
          '--cluster-node-timeout',
          '2000',
          '--tls-cluster',
          'yes',
          '--requirepass',
          PASSWORD,
          '--masterauth',
          PASSWORD,
        ]),
      ),
    );
    nodes = ports.map((port) => ({ host: '127.0.0.1', port }));
    // Made with plain commands, as `redis-cli --cluster create` makes it.
    const ca = await readCa();
    const admins = ports.map(
      (port) =>
        new Redis({ port, host: '127.0.0.1', password: PASSWORD, tls: { ca }, maxRetriesPerRequest: 1 }),
    );
    try {
      const slotsPerNode = Math.ceil(CLUSTER_SLOTS / admins.length);
      for (const [index, admin] of admins.entries()) {
        const first = index * slotsPerNode;
        await admin.call(
          'CLUSTER',
          'ADDSLOTSRANGE',
          first,
          Math.min(first + slotsPerNode, CLUSTER_SLOTS) - 1,
        );
      }
      // The bus ports are not port + 10000 (free ports were picked): MEET names them.
      for (const [index, port] of ports.entries())
        if (index > 0) await admins[0]!.call('CLUSTER', 'MEET', '127.0.0.1', port, busPorts[index]!);
      for (const admin of admins) {
        await waitFor('cluster_state:ok', async () =>
          String(await admin.call('CLUSTER', 'INFO')).includes('cluster_state:ok'),
        );
      }
    } finally {
      for (const admin of admins) admin.disconnect();
    }
  });

  it('is reached with store.redis.passwordFile and tls.caFile, on every master', async () => {
    const connection = await connect({ nodes }, { passwordFile, tls: { caFile: certificates.caFile } });
    await waitUntilConnected(connection, CONNECT_WAIT_MS);
    // Keys in slots of every master.
    const keys = Array.from({ length: 30 }, (_, index) => `{tenant:t${index}}:probe`);
    await Promise.all(keys.map((key) => connection.set(key, 'reached')));
    expect(await Promise.all(keys.map((key) => connection.get(key)))).toEqual(keys.map(() => 'reached'));
  });

  it('is refused without the password', async () => {
    const logger = recordingLogger();
    const connection = await connect({ nodes }, { tls: { caFile: certificates.caFile } }, logger);
    await expect(waitUntilConnected(connection, REFUSED_CONNECT_WAIT_MS)).rejects.toThrow();
    await waitFor('the refusal to be logged', () => logger.warnings.length > 0);
    // ioredis reports a Cluster it cannot read the slots of, whatever each node answered (NOAUTH here).
    expect(logger.warnings).toEqual(['Failed to refresh slots cache.']);
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
