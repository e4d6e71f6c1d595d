// Real redis-server processes on TLS alone (no plain port), with a CA and a certificate made by openssl
// for 127.0.0.1 and localhost: a single server, or a three-master Cluster with requirepass and TLS on its
// client and bus ports. Each in a scratch folder of its own, on free loopback ports; whoever starts one
// stops it (stop() also removes the folder).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from './free-port.ts';
import { waitFor } from './wait-for.ts';

const execFileAsync = promisify(execFile);

const CLUSTER_SLOTS = 16_384;

export interface TestCertificates {
  /** The CA's certificate (PEM), which a client trusts. */
  caFile: string;
  certFile: string;
  keyFile: string;
}

export interface TlsRedis {
  /** The folder holding the certificates (and the servers' data). */
  folder: string;
  certificates: TestCertificates;
  /** TLS ports, one per server. */
  ports: number[];
  /** The Cluster's seed nodes (every server), or the single server. */
  nodes: { host: string; port: number }[];
  /** An administrative client of one server (its password given), closed by stop(). */
  client(index: number): Redis;
  stop(): Promise<void>;
}

/** A CA, and a certificate it signs for 127.0.0.1 and localhost, made with openssl in `folder`. */
async function makeCertificates(folder: string): Promise<TestCertificates> {
  const file = (name: string) => join(folder, name);
  const openssl = (...args: string[]) => execFileAsync('openssl', args, { cwd: folder });
  // EC keys: made in milliseconds, where RSA keys take a loaded machine seconds.
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl(
    'req',
    '-x509',
    ...newKey,
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
    ...newKey,
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

/**
 * One redis-server on TLS alone, or (`cluster`) three Cluster masters with every slot assigned, resolved
 * once each reports cluster_state:ok. `password` sets requirepass (and masterauth).
 */
export async function startTlsRedis(options: { cluster: boolean; password?: string }): Promise<TlsRedis> {
  const folder = await mkdtemp(join(tmpdir(), 'gengate-tls-redis-'));
  const children: ChildProcess[] = [];
  const clients: Redis[] = [];
  const stop = async () => {
    for (const client of clients) client.disconnect();
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }),
    );
    await rm(folder, { recursive: true, force: true });
  };
  try {
    const certificates = await makeCertificates(folder);
    const ca = await readFile(certificates.caFile, 'utf8');
    const connectOptions = { host: '127.0.0.1', tls: { ca }, password: options.password };
    const serverCount = options.cluster ? 3 : 1;
    const ports = await Promise.all(Array.from({ length: serverCount }, () => freePort()));
    // Cluster bus ports picked free too (not port + 10000, which may be taken): MEET names them.
    const busPorts = await Promise.all(ports.map(() => freePort()));
    for (const [index, port] of ports.entries()) {
      const dir = await mkdtemp(join(folder, 'data-'));
      const args = [
        ...['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1'],
        ...['--tls-cert-file', certificates.certFile, '--tls-key-file', certificates.keyFile],
        ...['--tls-ca-cert-file', certificates.caFile, '--tls-auth-clients', 'no'],
        ...['--save', '', '--appendonly', 'no', '--dir', dir],
        ...(options.password === undefined
          ? []
          : ['--requirepass', options.password, '--masterauth', options.password]),
        ...(options.cluster
          ? ['--cluster-enabled', 'yes', '--cluster-port', String(busPorts[index]), '--tls-cluster', 'yes']
          : []),
        ...(options.cluster ? ['--cluster-node-timeout', '2000'] : []),
      ];
      children.push(spawn('redis-server', args, { stdio: 'ignore' }));
    }
    const client = async (index: number) => {
      const redis = new Redis({
        ...connectOptions,
        port: ports[index]!,
        maxRetriesPerRequest: 1,
        retryStrategy: () => 50,
      });
      redis.on('error', () => undefined);
      clients.push(redis);
      await waitFor(
        `redis-server on TLS port ${ports[index]!}`,
        async () => (await redis.ping().catch(() => undefined)) === 'PONG',
      );
      return redis;
    };
    const admins = await Promise.all(ports.map((_, index) => client(index)));
    if (options.cluster) {
      // Made with plain commands, as `redis-cli --cluster create` makes it.
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
      for (const [index, port] of ports.entries())
        if (index > 0) await admins[0]!.call('CLUSTER', 'MEET', '127.0.0.1', port, busPorts[index]!);
      for (const admin of admins) {
        await waitFor('cluster_state:ok', async () =>
          String(await admin.call('CLUSTER', 'INFO')).includes('cluster_state:ok'),
        );
      }
    }
    return {
      folder,
      certificates,
      ports,
      nodes: ports.map((port) => ({ host: '127.0.0.1', port })),
      client: (index) => admins[index]!,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
