// Refusals of non-loopback addresses (cloud metadata, an internal address, their other encodings), tested
// in a network namespace of its own where those addresses live on the namespace's loopback: a bug could
// only reach a receiver in the namespace, which counts it, never a host off the machine.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const PROBE = fileURLToPath(new URL('./support/netns-probe.ts', import.meta.url));
const ADDRESSES = ['169.254.169.254/32', '10.1.2.3/32', 'fd00:ec2::254/128'];

it('never connects to a metadata or unlisted address, whatever the list, the encoding, the DNS answer or a redirect says', async () => {
  const setUp = ['ip link set lo up', ...ADDRESSES.map((address) => `ip addr add ${address} dev lo`)].join(
    ' && ',
  );
  const { stdout } = await promisify(execFile)(
    'unshare',
    ['--net', '--', 'sh', '-c', `${setUp} && exec "$0" "$1"`, process.execPath, PROBE],
    { timeout: 60_000 },
  );
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
    },
    connections: { metadata: 0, metadataV6: 0, internalBeforeRedirect: 1, internal: 2 },
  });
});
