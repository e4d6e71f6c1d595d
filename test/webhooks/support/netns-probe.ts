// Run by test/webhooks/refusals-netns.test.ts inside network and mount namespaces of its own (`unshare
// --net --mount`), where the metadata and internal addresses exist only on the namespace's loopback and
// /etc/resolv.conf names the DNS server below (port 53 on loopback): if the sender ever connected to one
// of them, the packet would reach a receiver here and be counted, never leave the machine; and a sender
// that looked a name up again to connect (the system's getaddrinfo) would ask this server too.
// Prints one JSON object: each attempt's result, the connections each receiver saw, and what the webhook
// service (memory store, the machine's resolver as the gateway uses it) made of its deliveries.
import { compileDestinations } from '../../../src/webhooks/destinations.ts';
import { resolveWithServers, sendAttempt } from '../../../src/webhooks/send.ts';
import { startDnsServer } from '../../support/dns-server.ts';
import { waitFor } from '../../support/wait-for.ts';
import { answerStatus, startReceiver } from './receiver.ts';
import { openTestService, settlement, tenantWith } from './service-harness.ts';

const METADATA = '169.254.169.254';
const INTERNAL = '10.1.2.3';
// Private, and outside every list below.
const OUTSIDE = '172.16.5.5';
const AWS_V6_METADATA = 'fd00:ec2::254';

const metadata = await startReceiver(METADATA, answerStatus(200));
const port = metadata.port;
const metadataV6 = await startReceiver(AWS_V6_METADATA, answerStatus(200), port);
const internal = await startReceiver(
  INTERNAL,
  answerStatus(302, { location: `http://${METADATA}:${port}/latest/meta-data/` }),
  port,
);
const outside = await startReceiver(OUTSIDE, answerStatus(204), port);
const DNS_PORT = 53;
const dns = await startDnsServer(
  { 'metadata.test': [METADATA], 'flip.test': [INTERNAL] },
  '127.0.0.1',
  DNS_PORT,
);

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

// Within one attempt: the name answers the listed address to the check's lookup and the metadata
// address to any later one; the connection must go to the address checked.
await dns.setHosts({ 'swap.test': [INTERNAL] });
dns.rebindAfterFirstAnswer('swap.test', [METADATA]);
results.rebindWithinAttempt = await send(`http://swap.test:${port}/`, ['swap.test', '10.0.0.0/8']);

const connections = {
  metadata: metadata.connections,
  metadataV6: metadataV6.connections,
  internalBeforeRedirect: internalConnectionsBeforeRedirect,
  internal: internal.connections,
};

// The same refusals through the webhook service, with the resolver the gateway uses (getaddrinfo,
// which reads /etc/resolv.conf): one event for each webhook, then what each delivery came to.
await dns.setHosts({ 'metadata.test': [METADATA], 'rebind.test': [INTERNAL] });
dns.rebindAfterFirstAnswer('rebind.test', [METADATA]);
const internalBefore = internal.connections;
const webhooks = await openTestService({
  tenants: [
    tenantWith('team-a', [
      { id: 'name-to-metadata', url: `http://metadata.test:${port}/` },
      { id: 'metadata-literal', url: `http://${METADATA}:${port}/` },
      { id: 'outside-list', url: `http://${OUTSIDE}:${port}/` },
      { id: 'rebinding', url: `http://rebind.test:${port}/` },
    ]),
  ],
  webhooks: { allowedDestinations: ['10.0.0.0/8', '*.test'], allowHttp: ['10.0.0.0/8', '*.test'] },
});
await webhooks.onJobEnded(settlement('team-a', '0b0e4c2e-8a51-4c3f-9a4e-3d1f0f6b7a10'));
// Refused at a second attempt, or finished (which only a bug would do: then the output shows where to).
const settled = async () =>
  (await webhooks.list('team-a', 10)).every(
    (delivery) =>
      (typeof delivery.lastStatus === 'string' && delivery.attempts >= 2) || delivery.nextAttemptAt === null,
  );
await waitFor('every delivery refused at a second attempt, or finished', settled, 30_000);
const service = Object.fromEntries(
  (await webhooks.list('team-a', 10)).map((delivery) => [delivery.webhookId, delivery.lastStatus]),
);
await webhooks.close();

process.stdout.write(
  JSON.stringify({
    results,
    connections,
    service,
    serviceConnections: {
      metadata: metadata.connections - connections.metadata,
      outside: outside.connections,
      internal: internal.connections - internalBefore,
    },
    rebindingLookups:
      dns.queries.filter((query) => query.name === 'rebind.test' && query.type === 'A').length > 1,
  }),
);
await Promise.all([metadata.close(), metadataV6.close(), internal.close(), outside.close(), dns.stop()]);
