// The service's published request schemas in the gateway's variant (unknown top-level fields refused,
// guessed ranges not applied), one per create route, compiled once when this module loads.
import type { RouteId } from '../config/route-ids.ts';
import { imageRequestSchema, videoRequestSchema } from '../maxai/schemas.ts';
import { createRequestValidator, type RequestValidator } from './request-validator.ts';

const GATEWAY_SCHEMA_OPTIONS = { unknownTopLevel: 'reject', guessedRanges: false } as const;

interface SchemaNode {
  readonly properties?: Readonly<Record<string, SchemaNode>>;
  readonly [keyword: string]: unknown;
}

export interface RouteSchema {
  validate: RequestValidator;
  /** Every dotted path the schema names (`dimensions.outpaint.top`): the only values a metric label may take. */
  fieldPaths: ReadonlySet<string>;
}

function fieldPathsOf(node: SchemaNode, prefix = ''): string[] {
  return Object.entries(node.properties ?? {}).flatMap(([name, child]) => {
    const path = `${prefix}${name}`;
    return [path, ...fieldPathsOf(child, `${path}.`)];
  });
}

function routeSchema(schema: SchemaNode): RouteSchema {
  return { validate: createRequestValidator(schema), fieldPaths: new Set(fieldPathsOf(schema)) };
}

const ROUTE_SCHEMAS: ReadonlyMap<RouteId, RouteSchema> = new Map([
  ['images.create', routeSchema(imageRequestSchema(GATEWAY_SCHEMA_OPTIONS))],
  ['videos.create', routeSchema(videoRequestSchema(GATEWAY_SCHEMA_OPTIONS))],
]);

/** The schema of a route that takes a body; undefined for routes that take none. */
export function routeSchemaFor(route: RouteId): RouteSchema | undefined {
  return ROUTE_SCHEMAS.get(route);
}
