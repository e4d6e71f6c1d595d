// A small HTTP client for the simulator tests: real requests, bodies parsed losslessly (19-digit seeds).
import { parseJsonLossless } from '../../src/simulator/lossless-json.ts';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.ts';
import type { SimulatorOptions } from '../../src/simulator/app.ts';

export const TOKENS = { alpha: 'sim_test_alpha_4f2a9c1e7b3d5a60', beta: 'sim_test_beta_8d1c6e2f9a4b7c03' };
export const AUTH = { alpha: `Bearer ${TOKENS.alpha}`, beta: `Bearer ${TOKENS.beta}` };

export interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

export function startTestSimulator(options: Partial<SimulatorOptions> = {}): Promise<SimulatorServer> {
  return startSimulator({
    host: '127.0.0.1',
    port: 0,
    tokens: [
      { name: 'alpha', token: TOKENS.alpha },
      { name: 'beta', token: TOKENS.beta },
    ],
    queuedMs: 0,
    processingMs: 0,
    ...options,
  });
}

export async function call(
  simulator: { url: string },
  method: string,
  path: string,
  options: { auth?: string | null; body?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const auth = options.auth === undefined ? AUTH.alpha : options.auth;
  const response = await fetch(`${simulator.url}${path}`, {
    method,
    headers: {
      ...(auth === null ? {} : { authorization: auth }),
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    ...(options.body === undefined ? {} : { body: options.body }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? undefined : parseJsonLossless(text),
  };
}

export function postImage(simulator: { url: string }, body: unknown, auth?: string) {
  return call(simulator, 'POST', '/v1/images/generations', {
    body: JSON.stringify(body),
    ...(auth === undefined ? {} : { auth }),
  });
}

export function postVideo(simulator: { url: string }, body: unknown, auth?: string) {
  return call(simulator, 'POST', '/v1/videos/generations', {
    body: JSON.stringify(body),
    ...(auth === undefined ? {} : { auth }),
  });
}

/** The service's validation error envelope for one field. */
export function invalid(param: string, message: string) {
  return {
    status: 400,
    error: {
      code: 'invalid_parameter',
      type: 'validation_error',
      message: `${param} ${message}`,
      param,
      details: [{ param, message }],
    },
  };
}
