// When a file has shape problems, the checks that read across sections (references between tenants and
// credentials, the credentials' values) still run on the parts that passed the schema, so that one pass
// lists every problem. A part with a problem of its own is left to its shape problems: reading it as
// if it were well-formed could only report nonsense, or crash.
import type { GatewayConfig, TenantConfig } from './schema.ts';
import type { ShapeCheck } from './validate-shape.ts';

export type CredentialSource = GatewayConfig['upstream']['credentials'][string];
export interface NamedCredential {
  name: string;
  source: CredentialSource;
}

export interface WellFormedParts {
  /** The tenants that passed the schema, each with its index in the file. */
  tenants: { index: number; tenant: TenantConfig }[];
  /** Every name in upstream.credentials, well-formed or not; undefined when it is not a mapping. */
  credentialNames: string[] | undefined;
  /** The credentials that passed the schema. */
  credentials: NamedCredential[];
  /** Whether the store is a Redis Cluster (store.redis.nodes). */
  redisCluster: boolean;
  /** The globs of pricing.images, when that list passed the schema (absent: none). */
  imagePriceGlobs: string[] | undefined;
}

type Mapping = Record<string, unknown>;

export const isMapping = (value: unknown): value is Mapping =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The parts of a validated `document` that passed the schema (all of it when `shape` found nothing). */
export function wellFormedParts(document: unknown, shape: ShapeCheck): WellFormedParts {
  const root = isMapping(document) ? document : {};
  const tenants = Array.isArray(root.tenants) ? (root.tenants as unknown[]) : [];
  const upstream = isMapping(root.upstream) ? root.upstream : {};
  const credentials = isMapping(upstream.credentials) ? upstream.credentials : undefined;
  const pricing = isMapping(root.pricing) ? root.pricing : {};
  const imagePrices = Array.isArray(pricing.images) ? (pricing.images as { model: string }[]) : [];
  const store = isMapping(root.store) ? root.store : {};
  const redis = isMapping(store.redis) ? store.redis : {};
  return {
    redisCluster: store.kind !== 'memory' && redis.nodes !== undefined,
    imagePriceGlobs: shape.isWellFormed(['pricing', 'images'])
      ? imagePrices.map((price) => price.model)
      : undefined,
    tenants: tenants.flatMap((tenant, index) =>
      shape.isWellFormed(['tenants', index]) ? [{ index, tenant: tenant as TenantConfig }] : [],
    ),
    credentialNames: credentials === undefined ? undefined : Object.keys(credentials),
    credentials: Object.entries(credentials ?? {}).flatMap(([name, source]) =>
      shape.isWellFormed(['upstream', 'credentials', name])
        ? [{ name, source: source as CredentialSource }]
        : [],
    ),
  };
}
