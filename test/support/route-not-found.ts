// The gateway's whole answer to a request target that is not in the route table (contract section 3),
// whatever the method: the tests that probe the table from different sides expect this same body.
export const ROUTE_NOT_FOUND = {
  status: 404,
  error: {
    code: 'route_not_found',
    type: 'not_found_error',
    message: 'no such route; see the route table in the docs',
  },
};
