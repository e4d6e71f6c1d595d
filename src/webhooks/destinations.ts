// Where a webhook may be sent: the operator's `allowedDestinations` and `allowHttp` (host globs and
// CIDRs), judged on the address an attempt will actually connect to. Some addresses are never allowed
// whatever the lists say (cloud metadata, link-local, unspecified, broadcast, multicast, and the IPv6
// forms that carry an IPv4 address inside them); loopback and private addresses only through a listed
// CIDR, so that a listed name cannot be pointed at the gateway's own host or network by its DNS.
// Addresses arrive as text from the resolver or the URL; ipaddr.js parses every encoding the WHATWG URL
// parser lets through (it has already turned decimal, octal and hexadecimal IPv4 forms into dotted quads).
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** Why an attempt will not connect to an address. */
export type DestinationRefusal = 'never_allowed' | 'not_listed' | 'http_not_allowed';

const NEVER_ALLOWED_IPV4_RANGES = new Set(['unspecified', 'broadcast', 'multicast', 'linkLocal', 'reserved']);
// IPv4-mapped addresses are judged as the IPv4 address they map; the other transition forms can embed
// any IPv4 address and no internal service lives on them, so they are refused outright.
const NEVER_ALLOWED_IPV6_RANGES = new Set([
  'unspecified',
  'linkLocal',
  'multicast',
  'rfc6145',
  'rfc6052',
  '6to4',
  'teredo',
  'discard',
  'deprecatedSiteLocal',
  'reserved',
]);
// Metadata services outside the link-local range: AWS over IPv6, Alibaba Cloud, Azure's wire server.
const NEVER_ALLOWED_CIDRS: readonly [Address, number][] = [
  ipaddr.parseCIDR('fd00:ec2::254/128'),
  ipaddr.parseCIDR('100.100.100.200/32'),
  ipaddr.parseCIDR('168.63.129.16/32'),
];
// IPv4-compatible IPv6 (deprecated, ::a.b.c.d) is another way to write any IPv4 address; :: and ::1 share
// its prefix and are judged by their own ranges.
const IPV4_COMPATIBLE: [Address, number] = ipaddr.parseCIDR('::/96');
// Reached only through a listed CIDR, never through a listed name alone.
export const LISTED_CIDR_ONLY_RANGES: ReadonlySet<string> = new Set([
  'loopback',
  'private',
  'carrierGradeNat',
  'uniqueLocal',
]);

/** An IPv4-mapped IPv6 address as its IPv4 address; any other address as it is. */
function unmapped(address: Address): Address {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;
}

function inCidr(address: Address, [network, bits]: [Address, number]): boolean {
  return address.kind() === network.kind() && address.match(network, bits);
}

/** The address as parsed and unmapped, or undefined when the text is not an IP address. */
export function parseAddress(text: string): Address | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  return ipaddr.isValid(bare) ? unmapped(ipaddr.parse(bare)) : undefined;
}

/** Whether no list can ever allow this address. */
function isNeverAllowed(address: Address): boolean {
  const never = address.kind() === 'ipv4' ? NEVER_ALLOWED_IPV4_RANGES : NEVER_ALLOWED_IPV6_RANGES;
  if (never.has(address.range())) return true;
  if (NEVER_ALLOWED_CIDRS.some((cidr) => inCidr(address, cidr))) return true;
  return address.range() === 'unicast' && inCidr(address, IPV4_COMPATIBLE);
}

interface CompiledList {
  hosts: RegExp[];
  cidrs: [Address, number][];
}

/** One entry of a destination list: a CIDR, a bare address, or a host glob (`*` any run of characters). */
type DestinationEntry = { kind: 'cidr'; cidr: [Address, number] } | { kind: 'host'; glob: RegExp };

function parseDestinationEntry(entry: string): DestinationEntry {
  // Addresses are judged unmapped, so IPv4 ranges are listed in their IPv4 form.
  if (entry.includes('/') && ipaddr.isValidCIDR(entry)) {
    return { kind: 'cidr', cidr: ipaddr.parseCIDR(entry) };
  }
  const address = parseAddress(entry);
  if (address !== undefined) {
    return { kind: 'cidr', cidr: [address, address.kind() === 'ipv4' ? 32 : 128] };
  }
  const pattern = entry
    .toLowerCase()
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return { kind: 'host', glob: new RegExp(`^${pattern}$`) };
}

function compileList(entries: readonly string[]): CompiledList {
  const compiled: CompiledList = { hosts: [], cidrs: [] };
  for (const entry of entries) {
    const parsed = parseDestinationEntry(entry);
    if (parsed.kind === 'cidr') compiled.cidrs.push(parsed.cidr);
    else compiled.hosts.push(parsed.glob);
  }
  return compiled;
}

function listedCidr(list: CompiledList, address: Address): boolean {
  return list.cidrs.some((cidr) => inCidr(address, cidr));
}

function listedHost(list: CompiledList, hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  return list.hosts.some((glob) => glob.test(host));
}

export interface DestinationLists {
  allowedDestinations: readonly string[];
  allowHttp: readonly string[];
}

export interface DestinationJudge {
  /**
   * Whether an attempt may connect to `address` for a URL of this scheme and host name; undefined when
   * it may, the refusal otherwise.
   */
  judge(protocol: string, hostname: string, address: Address): DestinationRefusal | undefined;
  /**
   * The refusal every address of this host name would get, when the lists alone decide it (no glob
   * matches the name and no CIDR could hold its address); undefined when only a lookup can tell.
   */
  judgeName(protocol: string, hostname: string): DestinationRefusal | undefined;
}

export function compileDestinations(lists: DestinationLists): DestinationJudge {
  const allowed = compileList(lists.allowedDestinations);
  const plainHttp = compileList(lists.allowHttp);
  return {
    judge(protocol, hostname, address) {
      if (isNeverAllowed(address)) return 'never_allowed';
      const byCidr = listedCidr(allowed, address);
      const byHost = listedHost(allowed, hostname) && !LISTED_CIDR_ONLY_RANGES.has(address.range());
      if (!byCidr && !byHost) return 'not_listed';
      if (protocol === 'http:' && !listedCidr(plainHttp, address) && !listedHost(plainHttp, hostname)) {
        return 'http_not_allowed';
      }
      return undefined;
    },
    judgeName(protocol, hostname) {
      if (allowed.cidrs.length === 0 && !listedHost(allowed, hostname)) return 'not_listed';
      if (protocol === 'http:' && plainHttp.cidrs.length === 0 && !listedHost(plainHttp, hostname)) {
        return 'http_not_allowed';
      }
      return undefined;
    },
  };
}

// Never-allowed ranges that are one block each: an entry whose first and last addresses fall in the same
// one lies wholly inside it. (The multi-block ranges, `reserved` and NAT64, are left to the judge.)
const SINGLE_BLOCK_NEVER_ALLOWED = new Set([
  'unspecified',
  'broadcast',
  'multicast',
  'linkLocal',
  'rfc6145',
  '6to4',
  'teredo',
  'discard',
  'deprecatedSiteLocal',
]);
const IPV4_MAPPED: [Address, number] = ipaddr.parseCIDR('::ffff:0:0/96');

/** Why a list entry can never let an attempt through; undefined when it can (or is a host glob). */
export function entryWithoutEffect(entry: string): 'never_allowed' | 'ipv4_mapped' | undefined {
  const parsed = parseDestinationEntry(entry);
  if (parsed.kind === 'host') return undefined;
  const [network, bits] = parsed.cidr;
  // Addresses are judged unmapped, so a range written in the IPv4-mapped form never matches one (a bare
  // mapped address is read as its IPv4 address, as the judge reads it).
  if (network.kind() === 'ipv6' && inCidr(network, IPV4_MAPPED)) return 'ipv4_mapped';
  const cidr = `${network.toString()}/${bits}`;
  const family = network.kind() === 'ipv4' ? ipaddr.IPv4 : ipaddr.IPv6;
  const first = family.networkAddressFromCIDR(cidr);
  const last = family.broadcastAddressFromCIDR(cidr);
  const whole =
    (first.toString() === last.toString() && isNeverAllowed(first)) ||
    NEVER_ALLOWED_CIDRS.some(
      ([range, rangeBits]) => bits >= rangeBits && inCidr(first, [range, rangeBits]),
    ) ||
    (isNeverAllowed(first) &&
      isNeverAllowed(last) &&
      first.range() === last.range() &&
      SINGLE_BLOCK_NEVER_ALLOWED.has(first.range()));
  return whole ? 'never_allowed' : undefined;
}
