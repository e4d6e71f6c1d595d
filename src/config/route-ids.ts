// The gateway's route ids: the names limits and usage refer to, and the keys of the route table.
// The routes forwarded to the upstream: the ones upstream errors are counted for.
export const FORWARDED_ROUTE_IDS = [
  'images.create',
  'images.get',
  'videos.create',
  'videos.get',
  'videos.delete',
  'account.usage',
  'account.keys',
] as const;

// gengate's own routes (docs/webhooks.md), answered by the gateway itself.
const GATEWAY_OWN_ROUTE_IDS = ['webhooks.deliveries', 'webhooks.redeliver'] as const;

export const ROUTE_IDS = [...FORWARDED_ROUTE_IDS, ...GATEWAY_OWN_ROUTE_IDS] as const;

export type RouteId = (typeof ROUTE_IDS)[number];
