// A real DNS server on loopback (dnsmasq) answering only from a hosts file the test writes: nothing is
// forwarded, the machine's own resolver is never consulted. setHosts() rewrites the file and has dnsmasq
// read it again (SIGHUP), so a test can change what a name resolves to between two lookups.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Resolver } from 'node:dns/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';
import { waitFor } from './wait-for.ts';

export type HostTable = Record<string, string[]>;

export interface DnsServer {
  /** `127.0.0.1:<port>`, for a resolver's servers. */
  address: string;
  setHosts(hosts: HostTable): Promise<void>;
  stop(): Promise<void>;
}

const PROBE_NAME = 'dns-server-probe.test';

function hostsFile(hosts: HostTable, generation: number): string {
  const lines = Object.entries({ ...hosts, [PROBE_NAME]: [`127.0.0.${generation % 250}`] }).flatMap(
    ([name, addresses]) => addresses.map((address) => `${address} ${name}`),
  );
  return `${lines.join('\n')}\n`;
}

export async function startDnsServer(hosts: HostTable, listenAddress = '127.0.0.1'): Promise<DnsServer> {
  const dir = await mkdtemp(join(tmpdir(), 'gengate-dns-'));
  const file = join(dir, 'hosts');
  let generation = 1;
  await writeFile(file, hostsFile(hosts, generation));
  const port = await freePort();
  const child = spawn(
    'dnsmasq',
    [
      '--no-daemon',
      `--port=${port}`,
      `--listen-address=${listenAddress}`,
      '--bind-interfaces',
      '--no-resolv',
      '--no-hosts',
      `--addn-hosts=${file}`,
      '--cache-size=0',
      '--local-ttl=0',
      `--pid-file=${join(dir, 'pid')}`,
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      resolve();
    }),
  );
  const resolver = new Resolver({ timeout: 200, tries: 1 });
  resolver.setServers([`${listenAddress}:${port}`]);
  const serves = (expected: string) => async () => {
    try {
      return (await resolver.resolve4(PROBE_NAME)).includes(expected);
    } catch {
      return false;
    }
  };
  await waitFor('dnsmasq to answer', serves(`127.0.0.${generation}`));
  return {
    address: `${listenAddress}:${port}`,
    async setHosts(next) {
      generation += 1;
      await writeFile(file, hostsFile(next, generation));
      child.kill('SIGHUP');
      await waitFor('dnsmasq to read the new hosts', serves(`127.0.0.${generation % 250}`));
    },
    async stop() {
      child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
