// The gateway's whole answer to a request target that is not in the route table (docs/security.md#at-the-http-edge),
// whatever the method: the tests that probe the table from different sides expect this same body.
export const ROUTE_NOT_FOUND = {
  status: 404,
  error: {
    code: 'route_not_found',
    type: 'not_found_error',
    message: 'no such route; see the route table in the docs',
  },
};

/** The same 404 for a near miss of a table path (src/routing/route-table.ts), its message saying why. */
function nearMiss(message: string) {
  return { status: 404, error: { ...ROUTE_NOT_FOUND.error, message } };
}
export const ROUTE_ID_NOT_UUID = nearMiss(
  'no such route: the id in the path must be a UUID, such as 0f6c2a4e-8d1b-4c3a-9e7f-5a2b1c0d9e8f',
);
export const ROUTE_QUERY_STRING = nearMiss(
  'no such route: the gateway takes no query string; remove everything from "?"',
);
export const ROUTE_TRAILING_SLASH = nearMiss('no such route: remove the trailing slash');
