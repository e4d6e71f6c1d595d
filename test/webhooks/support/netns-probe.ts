// Run by test/webhooks/refusals-netns.test.ts inside a network namespace of its own (`unshare --net`),
// where the metadata and internal addresses exist only on the namespace's loopback: if the sender ever
// connected to one, the packet would reach a receiver here and be counted, never leave the machine.
// Prints one JSON object: each attempt's result, and the connections each receiver saw.
import { compileDestinations } from '../../../src/webhooks/destinations.ts';
import { resolveWithServers, sendAttempt } from '../../../src/webhooks/send.ts';
import { startDnsServer } from '../../support/dns-server.ts';
import { answerStatus, startReceiver } from './receiver.ts';

const METADATA = '169.254.169.254';
const INTERNAL = '10.1.2.3';
const AWS_V6_METADATA = 'fd00:ec2::254';

const metadata = await startReceiver(METADATA, answerStatus(200));
const port = metadata.port;
const metadataV6 = await startReceiver(AWS_V6_METADATA, answerStatus(200), port);
const internal = await startReceiver(
  INTERNAL,
  answerStatus(302, { location: `http://${METADATA}:${port}/latest/meta-data/` }),
  port,
);
const dns = await startDnsServer({ 'metadata.test': [METADATA], 'flip.test': [INTERNAL] });

// Lists that allow everything a list can allow: the never-allowed addresses must still be refused.
const everything = ['0.0.0.0/0', '::/0', '*'];
const send = async (url: string, allowedDestinations: string[]) =>
  sendAttempt(new URL(url), {}, '{}', {
    judge: compileDestinations({ allowedDestinations, allowHttp: allowedDestinations }),
    resolveHost: resolveWithServers([dns.address]),
    timeoutMs: 3_000,
    maxResponseBytes: 65_536,
  });

const results: Record<string, unknown> = {};
results.nameToMetadata = await send(`http://metadata.test:${port}/`, everything);
results.metadataLiteral = await send(`http://${METADATA}:${port}/`, everything);
results.metadataDecimal = await send(`http://2852039166:${port}/`, everything);
results.metadataHex = await send(`http://0xa9.0xfe.0xa9.0xfe:${port}/`, everything);
results.metadataMapped = await send(`http://[::ffff:${METADATA}]:${port}/`, everything);
results.metadataMappedHex = await send(`http://[::ffff:a9fe:a9fe]:${port}/`, everything);
results.metadataV6 = await send(`http://[${AWS_V6_METADATA}]:${port}/`, everything);
results.outsideList = await send(`http://${INTERNAL}:${port}/`, ['192.168.0.0/16', '*.svc.cluster.local']);
results.internalListedByNameOnly = await send(`http://flip.test:${port}/`, ['flip.test']);
results.flipBefore = await send(`http://flip.test:${port}/`, ['flip.test', '10.0.0.0/8']);
const internalConnectionsBeforeRedirect = internal.connections;
await dns.setHosts({ 'flip.test': [METADATA] });
results.flipAfter = await send(`http://flip.test:${port}/`, ['flip.test', '10.0.0.0/8', '169.254.0.0/16']);
results.redirectToMetadata = await send(`http://${INTERNAL}:${port}/`, ['10.0.0.0/8', '169.254.0.0/16']);

process.stdout.write(
  JSON.stringify({
    results,
    connections: {
      metadata: metadata.connections,
      metadataV6: metadataV6.connections,
      internalBeforeRedirect: internalConnectionsBeforeRedirect,
      internal: internal.connections,
    },
  }),
);
await Promise.all([metadata.close(), metadataV6.close(), internal.close(), dns.stop()]);
