// Fault switches for tests: make the next matching /v1 request slow, fail, vanish or hang, or make the
// job it creates fail, never end, or cost a given amount. One fault is active at a time; `times` counts matching requests down to zero.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { stringifyJson } from './lossless-json.ts';
import { errorEnvelope } from '../maxai/envelope.ts';

export interface Fault {
  /** Wait this long before handling the request. */
  delayMs?: number;
  /** Answer this status with a service-style error envelope. */
  status?: 500 | 503;
  /** Destroy the socket without answering. */
  dropConnection?: true;
  /** Send the headers and half of the body, then never finish (until the simulator closes). */
  stallBody?: true;
  /** The job this create request makes ends `failed`. Matches POST requests only. */
  failJob?: true;
  /** The job this create request makes never ends (POST only). */
  stallJob?: true;
  /** Each result of the job this create request makes costs this (POST only): e.g. above an estimate. */
  jobResultCostUsd?: number;
  /** Apply to this many matching requests, then clear; forever when absent. */
  times?: number;
  match?: { method?: string; pathPrefix?: string };
}

export interface FaultSwitch {
  set(fault: Fault): void;
  clear(): void;
  current(): Fault | undefined;
  /** The active fault when it matches this request, counting it down. */
  take(method: string, path: string): Fault | undefined;
}

/** For the control API: what a fault may contain. */
export const FAULT_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    delayMs: { type: 'integer', minimum: 0 },
    status: { enum: [500, 503] },
    dropConnection: { const: true },
    stallBody: { const: true },
    failJob: { const: true },
    stallJob: { const: true },
    jobResultCostUsd: { type: 'number', minimum: 0 },
    times: { type: 'integer', minimum: 1 },
    match: {
      type: 'object',
      additionalProperties: false,
      properties: { method: { type: 'string' }, pathPrefix: { type: 'string' } },
    },
  },
} as const;

/** What a fault does to the job its create makes (POST only). */
export interface JobTwist {
  fails: boolean;
  stalls: boolean;
  resultCostUsd: number | undefined;
}

function shapesJob(fault: Fault): boolean {
  return fault.failJob === true || fault.stallJob === true || fault.jobResultCostUsd !== undefined;
}

export function jobTwistOf(fault: Fault): JobTwist | undefined {
  if (!shapesJob(fault)) return undefined;
  return {
    fails: fault.failJob === true,
    stalls: fault.stallJob === true,
    resultCostUsd: fault.jobResultCostUsd,
  };
}

function matches(fault: Fault, method: string, path: string): boolean {
  if (shapesJob(fault) && method !== 'POST') return false;
  const { match } = fault;
  if (match?.method !== undefined && match.method.toUpperCase() !== method) return false;
  return match?.pathPrefix === undefined || path.startsWith(match.pathPrefix);
}

export function createFaultSwitch(): FaultSwitch {
  let active: { fault: Fault; remaining: number } | undefined;
  return {
    set(fault) {
      active = { fault: { ...fault }, remaining: fault.times ?? Number.POSITIVE_INFINITY };
    },
    clear() {
      active = undefined;
    },
    current: () => active?.fault,
    take(method, path) {
      if (active === undefined || !matches(active.fault, method, path)) return undefined;
      const { fault } = active;
      active.remaining -= 1;
      if (active.remaining <= 0) active = undefined;
      return fault;
    },
  };
}

const FAULT_MESSAGES = {
  500: { code: 'internal_error', message: 'the service failed to process the request (simulated)' },
  503: { code: 'service_unavailable', message: 'the service is temporarily unavailable (simulated)' },
} as const;

function answerWithStatus(reply: FastifyReply, status: 500 | 503): void {
  const { code, message } = FAULT_MESSAGES[status];
  void reply
    .code(status)
    .type('application/json')
    .send(errorEnvelope(status, { code, type: 'unavailable_error', message }));
}

function stallMidBody(reply: FastifyReply): void {
  const body = Buffer.from(stringifyJson({ status: 200, data: { note: 'this body never finishes' } }));
  reply.hijack();
  reply.raw.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
  reply.raw.write(body.subarray(0, body.length >> 1));
}

/**
 * Plays the fault on this request. Returns true when the request has been dealt with (answered,
 * dropped or stalled) and must not be handled further.
 */
export async function playFault(
  fault: Fault,
  request: FastifyRequest,
  reply: FastifyReply,
  closing: AbortSignal,
): Promise<boolean> {
  if (fault.delayMs !== undefined) {
    try {
      await sleep(fault.delayMs, undefined, { signal: closing });
    } catch {
      // The simulator is closing: the socket goes with it, so there is nobody to answer.
      reply.hijack();
      return true;
    }
  }
  if (fault.dropConnection === true) {
    reply.hijack();
    request.raw.socket.destroy();
    return true;
  }
  if (fault.stallBody === true) {
    stallMidBody(reply);
    return true;
  }
  if (fault.status !== undefined) {
    answerWithStatus(reply, fault.status);
    return true;
  }
  return false;
}
