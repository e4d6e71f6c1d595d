// Refusals of non-loopback addresses (cloud metadata, an internal address, their other encodings), tested
// in a network namespace of its own where those addresses live on the namespace's loopback: a bug could
// only reach a receiver in the namespace, which counts it, never a host off the machine. A mount
// namespace points /etc/resolv.conf at the probe's DNS server, so the machine's resolver (the one the
// gateway uses) and any second lookup a broken sender made would ask it, and be rebound by it.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const PROBE = fileURLToPath(new URL('./support/netns-probe.ts', import.meta.url));
const ADDRESSES = ['169.254.169.254/32', '10.1.2.3/32', '172.16.5.5/32', 'fd00:ec2::254/128'];

it('never connects to a metadata or unlisted address, whatever the list, the encoding, the DNS answer or a redirect says', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'gengate-netns-'));
  const resolvConf = join(folder, 'resolv.conf');
  await writeFile(resolvConf, 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n');
  const setUp = [
    'ip link set lo up',
    ...ADDRESSES.map((address) => `ip addr add ${address} dev lo`),
    'mount --bind "$2" /etc/resolv.conf',
  ].join(' && ');
  const { stdout } = await promisify(execFile)(
    'unshare',
    ['--net', '--mount', '--', 'sh', '-c', `${setUp} && exec "$0" "$1"`, process.execPath, PROBE, resolvConf],
    { timeout: 90_000 },
  ).finally(() => rm(folder, { recursive: true, force: true }));
  const neverAllowed = { kind: 'refused', reason: 'never_allowed' };
  expect(JSON.parse(stdout)).toEqual({
    results: {
      nameToMetadata: neverAllowed,
      metadataLiteral: neverAllowed,
      metadataDecimal: neverAllowed,
      metadataHex: neverAllowed,
      metadataMapped: neverAllowed,
      metadataMappedHex: neverAllowed,
      metadataV6: neverAllowed,
      outsideList: { kind: 'refused', reason: 'not_listed' },
      internalListedByNameOnly: { kind: 'refused', reason: 'not_listed' },
      flipBefore: { kind: 'answered', status: 302 },
      flipAfter: neverAllowed,
      redirectToMetadata: { kind: 'answered', status: 302 },
      rebindWithinAttempt: { kind: 'answered', status: 302 },
    },
    connections: { metadata: 0, metadataV6: 0, internalBeforeRedirect: 1, internal: 3 },
    // The rebinding name: its first attempt went to the address checked (302, not followed), the next
    // ones looked it up again and were refused at the metadata address.
    service: {
      'name-to-metadata': 'refused:never_allowed',
      'metadata-literal': 'refused:never_allowed',
      'outside-list': 'refused:not_listed',
      rebinding: 'refused:never_allowed',
    },
    serviceConnections: { metadata: 0, outside: 0, internal: 1 },
    rebindingLookups: true,
  });
}, 120_000);
