// The stall budget (docs/validation.md#the-cost-of-judging-a-body): how long judging one body holds the event loop, for the worst body shapes
// of a given size against the plain submission of the same size. Judging is everything the gateway does
// synchronously with a body before the upstream sees it: decode, structure scan and parse
// (parseJsonBody), schema validation and its explanation, the policy with the rewrite it causes, and the
// error answer's serialisation. It all runs in one turn of the event loop, so the time of one call is
// the time every other request waits. Measured in this process, in interleaved rounds, median per shape.
//
//   node bench/stall-budget.ts [--bytes N] [--rounds N]    (also a step of `npm run bench`)
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { TenantPolicy } from '../src/config/schema.ts';
import { toGatewayError } from '../src/errors/error-handler.ts';
import { gatewayError } from '../src/errors/registry.ts';
import { errorEnvelope } from '../src/maxai/envelope.ts';
import { toErrorDetails } from '../src/validation/request-validator.ts';
import { applyPolicy } from '../src/policy/apply-policy.ts';
import { parseJsonBody, rewriteTopLevelMembers } from '../src/validation/json-body.ts';
import { routeSchemaFor } from '../src/validation/request-schemas.ts';
import { HOSTILE_SHAPES, PLAIN_SHAPE, type BodyShape } from './hostile-bodies.ts';
import { formatTable, fixed } from './report.ts';
import { median } from './measure.ts';

export const DEFAULT_STALL_BODY_BYTES = 1_048_576;
export const DEFAULT_STALL_ROUNDS = 7;
export const SMOKE_STALL_BODY_BYTES = 65_536;
export const SMOKE_STALL_ROUNDS = 3;
/** Untimed rounds first: the gateway judges bodies with optimised code, not with the interpreter's. */
const WARMUP_ROUNDS = 5;

/**
 * The bound docs/validation.md states: judging any body takes at most STALL_BUDGET_RATIO times judging
 * the plain body of the same size, or STALL_FLOOR_MS, whichever is larger. The floor is for small
 * bodies, where a plain body costs next to nothing and the value limit (MAX_JSON_VALUES) is what bounds
 * a hostile one.
 */
export const STALL_BUDGET_RATIO = 10;
export const STALL_FLOOR_MS = 5;

/** A tenant policy that rewrites: samples clamped, safetyLevel raised, scanResults set. */
const REWRITING_POLICY: TenantPolicy = {
  mode: 'enforce',
  safetyLevel: { minimum: 'high', onViolation: 'raise' },
  samples: { maximum: 1, onViolation: 'clamp' },
  scanResults: { require: true },
};

const validateImage = routeSchemaFor('images.create');

/** What the gateway does synchronously with a submitted body; returns the answer's status. */
function judge(raw: Buffer): number {
  try {
    const body = parseJsonBody(raw);
    const result = validateImage!.validate(body.value, body.numbers);
    if (!result.ok) {
      throw gatewayError(
        'invalid_parameter',
        { problem: 'refused' },
        { details: toErrorDetails(result.problems) },
      );
    }
    const outcome = applyPolicy(REWRITING_POLICY, 'images.create', body.value, body.numbers);
    const fields = outcome.changes.map((change) => change.field);
    rewriteTopLevelMembers(body, outcome.body, fields);
    return 200;
  } catch (error) {
    const failure = toGatewayError(error);
    const { code, type, message, details } = failure;
    JSON.stringify(errorEnvelope(failure.status, { code, type, message, ...(details ? { details } : {}) }));
    return failure.status;
  }
}

export interface ShapeStall {
  id: string;
  label: string;
  bytes: number;
  /** What the gateway answers this body. */
  status: number;
  /** Median time to judge the body once. */
  judgeMs: number;
  /** Median time of JSON.parse alone on the same text: what any JSON service pays. */
  parseMs: number;
  /** judgeMs over the plain body's judgeMs. */
  overPlain: number;
}

export interface StallBudget {
  bytes: number;
  rounds: number;
  budgetRatio: number;
  floorMs: number;
  plain: ShapeStall;
  shapes: ShapeStall[];
  worstOverPlain: number;
  worstJudgeMs: number;
  /** Every shape within max(budgetRatio x the plain body, floorMs). */
  met: boolean;
}

function timeOnce(work: () => unknown): number {
  const started = performance.now();
  work();
  return performance.now() - started;
}

export function measureStallBudget(options: { bytes: number; rounds: number }): StallBudget {
  const shapes: BodyShape[] = [PLAIN_SHAPE, ...HOSTILE_SHAPES];
  const bodies = shapes.map((shape) => {
    const text = shape.build(options.bytes);
    return { shape, text, raw: Buffer.from(text, 'utf8'), judgeMs: [] as number[], parseMs: [] as number[] };
  });
  const statuses = bodies.map((body) => judge(body.raw));
  for (let round = 1; round < WARMUP_ROUNDS; round += 1) for (const body of bodies) judge(body.raw);
  // Interleaved, so that a burst of load from elsewhere on the machine touches every shape alike.
  for (let round = 0; round < options.rounds; round += 1) {
    for (const body of bodies) {
      body.judgeMs.push(timeOnce(() => judge(body.raw)));
      body.parseMs.push(timeOnce(() => JSON.parse(body.text)));
    }
  }
  const plainMs = median(bodies[0]!.judgeMs);
  const stalls = bodies.map((body, index): ShapeStall => ({
    id: body.shape.id,
    label: body.shape.label,
    bytes: body.raw.length,
    status: statuses[index]!,
    judgeMs: median(body.judgeMs),
    parseMs: median(body.parseMs),
    overPlain: median(body.judgeMs) / plainMs,
  }));
  const [plain, ...hostile] = stalls;
  const worstJudgeMs = Math.max(...hostile.map((stall) => stall.judgeMs));
  return {
    bytes: options.bytes,
    rounds: options.rounds,
    budgetRatio: STALL_BUDGET_RATIO,
    floorMs: STALL_FLOOR_MS,
    plain: plain!,
    shapes: hostile,
    worstOverPlain: Math.max(...hostile.map((stall) => stall.overPlain)),
    worstJudgeMs,
    met: worstJudgeMs <= Math.max(STALL_BUDGET_RATIO * plainMs, STALL_FLOOR_MS),
  };
}

export function stallBudgetTable(budget: StallBudget): string {
  return formatTable(
    ['body shape', 'bytes', 'answer', 'judge ms', 'JSON.parse ms', 'judge / plain'],
    [budget.plain, ...budget.shapes].map((stall) => [
      stall.label,
      String(stall.bytes),
      String(stall.status),
      fixed(stall.judgeMs, 2),
      fixed(stall.parseMs, 2),
      fixed(stall.overPlain, 1),
    ]),
  );
}

export function stallBudgetSummary(budget: StallBudget): string {
  return (
    `worst shape / plain body: ${fixed(budget.worstOverPlain, 1)}; worst shape ` +
    `${fixed(budget.worstJudgeMs, 2)} ms (budget: ${budget.budgetRatio} x the plain body or ` +
    `${budget.floorMs} ms, whichever is larger: ${budget.met ? 'met' : 'NOT MET'})`
  );
}

function wholeNumber(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a whole number above 0`);
  return value;
}

function main(): void {
  const { values } = parseArgs({
    options: {
      bytes: { type: 'string' },
      rounds: { type: 'string' },
      smoke: { type: 'boolean', default: false },
    },
  });
  const budget = measureStallBudget({
    bytes: wholeNumber(
      'bytes',
      values.bytes,
      values.smoke ? SMOKE_STALL_BODY_BYTES : DEFAULT_STALL_BODY_BYTES,
    ),
    rounds: wholeNumber('rounds', values.rounds, values.smoke ? SMOKE_STALL_ROUNDS : DEFAULT_STALL_ROUNDS),
  });
  const print = (text: string) => process.stdout.write(`${text}\n`);
  print(`stall budget: medians of ${budget.rounds} interleaved rounds, Node ${process.version}`);
  print(stallBudgetTable(budget));
  print(stallBudgetSummary(budget));
  const resultsDir = fileURLToPath(new URL('results/', import.meta.url));
  mkdirSync(resultsDir, { recursive: true });
  const resultFile = join(resultsDir, `stall-${new Date().toISOString().replaceAll(':', '-')}.json`);
  writeFileSync(resultFile, `${JSON.stringify({ node: process.version, ...budget }, null, 2)}\n`);
  print(`results written to ${resultFile}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
