// When a file has shape problems, the checks that read across sections (references between tenants and
// credentials, the credentials' values) still run on the parts that passed the schema, so that one pass
// lists every problem. A part with a problem of its own is left to its shape problems: reading it as
// if it were well-formed could only report nonsense, or crash.
import type { GatewayConfig, TenantConfig, TenantLimit } from './schema.ts';
import type { PathSegment } from './problems.ts';
import type { ShapeCheck } from './validate-shape.ts';

export type CredentialSource = GatewayConfig['upstream']['credentials'][string];
export interface NamedCredential {
  name: string;
  source: CredentialSource;
}

type TenantKey = TenantConfig['keys'][number];
type TenantWebhook = TenantConfig['webhooks'][number];

/** A tenant's members that passed the schema; list items keep their index in the file. */
export interface TenantMembers {
  index: number;
  id: string | undefined;
  credential: string | undefined;
  keys: { index: number; item: TenantKey }[];
  limits: { index: number; item: TenantLimit }[];
  webhooks: { index: number; item: TenantWebhook }[];
  account: TenantConfig['account'] | undefined;
  policy: TenantConfig['policy'] | undefined;
  budget: TenantConfig['budget'];
}

export interface WellFormedParts {
  /**
   * Every tenant, well-formed or not, with only its members that passed the schema: a mistake in one
   * limit must not hide a duplicate id or an unknown credential in the same file.
   */
  tenantMembers: TenantMembers[];
  /** Every name in upstream.credentials, well-formed or not; undefined when it is not a mapping. */
  credentialNames: string[] | undefined;
  /** The credentials that passed the schema. */
  credentials: NamedCredential[];
  /** The globs of pricing.images, when that list passed the schema (absent: none). */
  imagePriceGlobs: string[] | undefined;
  /** store.redis.url (REDIS_URL's value when set), when it passed the schema. */
  redisUrl: string | undefined;
}

type Mapping = Record<string, unknown>;

export const isMapping = (value: unknown): value is Mapping =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The items of `list` that passed the schema, each with its index in the file. */
function wellFormedItems(
  list: unknown,
  at: PathSegment[],
  shape: ShapeCheck,
): { index: number; item: unknown }[] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((item: unknown, index) =>
    shape.isWellFormed([...at, index]) ? [{ index, item }] : [],
  );
}

function tenantMembers(tenant: Mapping, index: number, shape: ShapeCheck): TenantMembers {
  const at = ['tenants', index];
  const wellFormedString = (name: string) =>
    typeof tenant[name] === 'string' && shape.isWellFormed([...at, name]) ? tenant[name] : undefined;
  const wellFormedMapping = (name: string) =>
    isMapping(tenant[name]) && shape.isWellFormed([...at, name]) ? tenant[name] : undefined;
  return {
    index,
    id: wellFormedString('id'),
    credential: wellFormedString('credential'),
    keys: wellFormedItems(tenant.keys, [...at, 'keys'], shape) as TenantMembers['keys'],
    limits: wellFormedItems(tenant.limits, [...at, 'limits'], shape) as TenantMembers['limits'],
    webhooks: wellFormedItems(tenant.webhooks, [...at, 'webhooks'], shape) as TenantMembers['webhooks'],
    account: wellFormedString('account') as TenantMembers['account'],
    policy: wellFormedMapping('policy') as TenantMembers['policy'],
    budget: wellFormedMapping('budget'),
  };
}

/** The parts of a validated `document` that passed the schema (all of it when `shape` found nothing). */
export function wellFormedParts(document: unknown, shape: ShapeCheck): WellFormedParts {
  const root = isMapping(document) ? document : {};
  const tenants = Array.isArray(root.tenants) ? (root.tenants as unknown[]) : [];
  const upstream = isMapping(root.upstream) ? root.upstream : {};
  const credentials = isMapping(upstream.credentials) ? upstream.credentials : undefined;
  const pricing = isMapping(root.pricing) ? root.pricing : {};
  const store = isMapping(root.store) ? root.store : {};
  const redis = isMapping(store.redis) ? store.redis : {};
  const imagePrices = Array.isArray(pricing.images) ? (pricing.images as { model: string }[]) : [];
  return {
    imagePriceGlobs: shape.isWellFormed(['pricing', 'images'])
      ? imagePrices.map((price) => price.model)
      : undefined,
    tenantMembers: tenants.flatMap((tenant, index) =>
      isMapping(tenant) ? [tenantMembers(tenant, index, shape)] : [],
    ),
    redisUrl:
      typeof redis.url === 'string' && shape.isWellFormed(['store', 'redis', 'url']) ? redis.url : undefined,
    credentialNames: credentials === undefined ? undefined : Object.keys(credentials),
    credentials: Object.entries(credentials ?? {}).flatMap(([name, source]) =>
      shape.isWellFormed(['upstream', 'credentials', name])
        ? [{ name, source: source as CredentialSource }]
        : [],
    ),
  };
}
