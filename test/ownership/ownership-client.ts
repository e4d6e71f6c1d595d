// Small HTTP helpers for the ownership tests: a tenant's create, poll and cancel through the gateway,
// answered with status, the headers the tests read and the parsed body.
import type { GatewayHarness } from '../support/gateway-harness.ts';

export type Tenant = 'alpha' | 'gamma';

export interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

async function answer(response: Response): Promise<Answer> {
  return { status: response.status, headers: response.headers, body: await response.json() };
}

export async function createImage(harness: GatewayHarness, tenant: Tenant, body: object): Promise<Answer> {
  return answer(
    await fetch(`${harness.url}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness.keys[tenant]}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );
}

export async function createVideo(harness: GatewayHarness, tenant: Tenant, body: object): Promise<Answer> {
  return answer(
    await fetch(`${harness.url}/v1/videos/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness.keys[tenant]}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );
}

export async function callRequest(
  harness: GatewayHarness,
  tenant: Tenant,
  method: 'GET' | 'DELETE',
  path: string,
): Promise<Answer> {
  return answer(
    await fetch(`${harness.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${harness.keys[tenant]}` },
    }),
  );
}

export function submission(requestId: string) {
  return { status: 200, data: { requestId } };
}

export function notFound(requestId: string) {
  return {
    status: 404,
    error: {
      code: 'request_not_found',
      type: 'not_found_error',
      message: `request ${requestId} was not found`,
    },
  };
}

export function inUse(requestId: string) {
  return {
    status: 409,
    error: {
      code: 'request_id_conflict',
      type: 'conflict_error',
      message: `requestId ${requestId} is already in use; submit with another requestId`,
      param: 'requestId',
    },
  };
}

export function pending(requestId: string) {
  return {
    status: 409,
    error: {
      code: 'request_id_conflict',
      type: 'conflict_error',
      message: `a submission with requestId ${requestId} is still in progress or its outcome is unknown; poll it, or submit with another requestId`,
      param: 'requestId',
    },
  };
}

export const STORE_UNAVAILABLE = {
  status: 503,
  error: {
    code: 'store_unavailable',
    type: 'unavailable_error',
    message: 'the request ownership store is unavailable; retry shortly',
  },
};

/** Creates the simulator received, as `{ url, body }`. */
export function receivedCreates(harness: GatewayHarness) {
  return harness.simulator.received
    .filter((request) => request.method === 'POST')
    .map((request) => ({ url: request.url, body: request.body.toString('utf8') }));
}
