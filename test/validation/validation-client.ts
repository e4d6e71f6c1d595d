// What every validation test does: send a body through the gateway, then prove either that the gateway
// refused it with a whole, exact error body and nothing reached the upstream, or that the upstream
// received the very bytes the client sent.
import { expect } from 'vitest';
import {
  sentWithAssignedRequestId,
  useGatewayHarness,
  type GatewayHarness,
  type HarnessOptions,
} from '../support/gateway-harness.ts';
import { answerToUnfinishedUpload, type EarlyResponse } from './unfinished-upload.ts';

export const IMAGES = '/v1/images/generations';
export const VIDEOS = '/v1/videos/generations';

/** Enough upstream room for a whole table of accepted cases against one simulator account. */
const GENEROUS_UPSTREAM_REQUESTS_PER_MINUTE = 100_000;

/** One gateway for the test file (useGatewayHarness) whose upstream accepts every case the file sends. */
export function useValidationGateway(options: HarnessOptions = {}): GatewayHarness {
  return useGatewayHarness({ simulatorRequestsPerMinute: GENEROUS_UPSTREAM_REQUESTS_PER_MINUTE, ...options });
}

export interface GatewayAnswer {
  status: number;
  headers: Headers;
  text: string;
}

export async function postJson(
  harness: GatewayHarness,
  path: string,
  body: string | Uint8Array,
  headers: Record<string, string> = { 'content-type': 'application/json' },
): Promise<GatewayAnswer> {
  const response = await fetch(`${harness.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${harness.keys.alpha}`, ...headers },
    body,
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/**
 * A JSON POST from alpha of which only `partialBody` is ever sent, framed by `framing` (its
 * Content-Length or Transfer-Encoding header): an answer proves the gateway decided before the body was
 * whole.
 */
export function postUnfinishedJson(
  harness: GatewayHarness,
  path: string,
  framing: Record<string, string>,
  partialBody: string,
): Promise<EarlyResponse> {
  const headers = { authorization: `Bearer ${harness.keys.alpha}`, 'content-type': 'application/json' };
  return answerToUnfinishedUpload(harness.url, path, { ...headers, ...framing }, partialBody);
}

export interface ErrorExtras {
  param?: string;
  details?: { param: string; message: string }[];
}

export function errorBody(status: number, code: string, message: string, extras: ErrorExtras = {}) {
  return { status, error: { code, type: 'validation_error', message, ...extras } };
}

export const NOT_UTF8_JSON = 'the request body is not valid UTF-8 JSON';

/** 400 invalid_json, naming the member at fault where there is one. */
export function invalidJson(message: string, param?: string) {
  return errorBody(400, 'invalid_json', message, param === undefined ? {} : { param });
}

/** 400 invalid_parameter (or unknown_parameter) naming one field, as the contract's example shows. */
export function parameterError(param: string, message: string) {
  return errorBody(400, 'invalid_parameter', `${param} ${message}`, { param, details: [{ param, message }] });
}

export const UNKNOWN_MEMBER = 'the member named by param is not a known parameter';

/**
 * 400 unknown_parameter: the first member the client invented named once, in `param` (never in the
 * message), and every other problem in `details` (absent when there is none).
 */
export function unknownMember(param: string, otherProblems: { param: string; message: string }[] = []) {
  return errorBody(400, 'unknown_parameter', UNKNOWN_MEMBER, {
    param,
    ...(otherProblems.length > 0 ? { details: otherProblems } : {}),
  });
}

export function expectRefused(
  harness: GatewayHarness,
  answer: GatewayAnswer,
  expected: ReturnType<typeof errorBody>,
): void {
  expect({ status: answer.status, body: JSON.parse(answer.text) as unknown }).toEqual({
    status: expected.status,
    body: expected,
  });
  expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(harness.simulator.received).toEqual([]);
}

/** The upstream got exactly one request, with the client's bytes unchanged. */
export function expectForwardedVerbatim(
  harness: GatewayHarness,
  path: string,
  sent: string | Uint8Array,
): void {
  expect(harness.simulator.received.map((request) => `${request.method} ${request.url}`)).toEqual([
    `POST ${path}`,
  ]);
  expect(harness.simulator.received[0]!.body).toEqual(sentWithAssignedRequestId(harness, sent));
}
