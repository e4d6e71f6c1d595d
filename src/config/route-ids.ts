// The gateway's route ids: the names limits and usage refer to, and the keys of the route table.
export const ROUTE_IDS = [
  'images.create',
  'images.get',
  'videos.create',
  'videos.get',
  'videos.delete',
  'account.usage',
  'account.keys',
] as const;

export type RouteId = (typeof ROUTE_IDS)[number];
