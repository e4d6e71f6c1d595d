// What an operator should hear of before any attempt is made (docs/webhooks.md, "Security"): entries of
// `allowedDestinations` and `allowHttp` that can never let an attempt through, and webhook URLs that every
// attempt would refuse whatever their name resolves to. Warnings, not errors: an address is judged when
// an attempt is made, so that one tenant's bad URL never stops the gateway from starting; check-config
// prints them (and fails on them with --strict), and the gateway logs them at start and on reload.
// Only what the configuration alone decides is reported: a name is never looked up here (check-config
// runs in pipelines away from the network the gateway resolves in).
import { formatPath, type ConfigProblem } from '../config/problems.ts';
import type { GatewayConfig, TenantConfig } from '../config/schema.ts';
import {
  compileDestinations,
  LISTED_CIDR_ONLY_RANGES,
  entryWithoutEffect,
  parseAddress,
  type DestinationJudge,
  type DestinationRefusal,
} from './destinations.ts';

// RFC 6761: a resolver answers every name under `localhost` with a loopback address.
const LOOPBACK_NAME = /^(?:.+\.)?localhost\.?$/i;
const LOOPBACK_ADDRESSES = ['127.0.0.1', '::1'].flatMap((text) => parseAddress(text) ?? []);
const NEVER_ALLOWED_KINDS = 'link-local, cloud metadata, unspecified, broadcast and multicast addresses';

function listWarnings(
  list: 'allowedDestinations' | 'allowHttp',
  entries: readonly string[],
): ConfigProblem[] {
  return entries.flatMap((entry, index) => {
    const why = entryWithoutEffect(entry);
    if (why === undefined) return [];
    const message =
      why === 'never_allowed'
        ? `"${entry}" has no effect: ${NEVER_ALLOWED_KINDS} are never webhook destinations`
        : `"${entry}" has no effect: addresses are judged in their IPv4 form, so list the IPv4 range`;
    return [{ path: formatPath(['webhooks', list, index]), message }];
  });
}

type Address = NonNullable<ReturnType<typeof parseAddress>>;

/** What to tell of a refusal of `host` (at `address`, when known without a lookup). */
function describeRefusal(refusal: DestinationRefusal, host: string, address: Address | undefined): string {
  if (refusal === 'never_allowed') {
    return `${host} is a link-local, cloud metadata, unspecified, broadcast or multicast address, never a webhook destination`;
  }
  if (refusal === 'http_not_allowed') {
    return `plain http to ${host}, which webhooks.allowHttp does not list (https is required)`;
  }
  if (address === undefined) {
    return `${host} matches no host in webhooks.allowedDestinations, which lists no CIDR`;
  }
  return LISTED_CIDR_ONLY_RANGES.has(address.range())
    ? `${host} is a loopback or private address, allowed only through a CIDR listed in webhooks.allowedDestinations`
    : `${host} is not in webhooks.allowedDestinations`;
}

/** Why every attempt at this URL is refused; undefined when one may pass. */
function urlRefusal(judge: DestinationJudge, url: URL): string | undefined {
  const host = url.hostname;
  const literal = parseAddress(host);
  if (literal !== undefined) {
    const refusal = judge.judge(url.protocol, host, literal);
    return refusal === undefined ? undefined : describeRefusal(refusal, host, literal);
  }
  if (LOOPBACK_NAME.test(host)) {
    const refusals = LOOPBACK_ADDRESSES.map((address) => judge.judge(url.protocol, host, address));
    const [first] = refusals;
    return first === undefined || refusals.includes(undefined)
      ? undefined
      : describeRefusal(first, `${host} (loopback)`, LOOPBACK_ADDRESSES[0]);
  }
  const refusal = judge.judgeName(url.protocol, host);
  return refusal === undefined ? undefined : describeRefusal(refusal, host, undefined);
}

function urlWarnings(judge: DestinationJudge, tenants: readonly TenantConfig[]): ConfigProblem[] {
  return tenants.flatMap((tenant, tenantIndex) =>
    tenant.webhooks.flatMap((webhook, webhookIndex) => {
      // A URL that does not parse is a configuration error already (src/config/semantic-checks.ts).
      if (!URL.canParse(webhook.url)) return [];
      const why = urlRefusal(judge, new URL(webhook.url));
      if (why === undefined) return [];
      // The URL itself is not quoted: it may carry credentials of the receiver's.
      return [
        {
          path: formatPath(['tenants', tenantIndex, 'webhooks', webhookIndex, 'url']),
          message: `webhook "${webhook.id}" of tenant "${tenant.id}" will be refused at every attempt: ${why}`,
        },
      ];
    }),
  );
}

export function webhookDestinationWarnings(
  config: Pick<GatewayConfig, 'webhooks'> & { tenants: readonly TenantConfig[] },
): ConfigProblem[] {
  return [
    ...listWarnings('allowedDestinations', config.webhooks.allowedDestinations),
    ...listWarnings('allowHttp', config.webhooks.allowHttp),
    ...urlWarnings(compileDestinations(config.webhooks), config.tenants),
  ];
}
