// One evaluator per policy rule, each judging one field of a validated request body and returning its
// decision, or undefined when the request complies or the rule does not concern the route. An omitted or
// null field is judged as the service default it stands for (docs/policy.md), never as "no value".
import type { TenantPolicy } from '../config/schema.ts';
import { compareDecimals, isWholeDecimal, parseExactDecimal } from '../json/exact-decimal.ts';
import { exactNumberAt, type NumberTexts } from '../json/number-texts.ts';
import { IMAGE_DEFAULTS, SAFETY_LEVELS, type SafetyLevel } from '../maxai/schemas.ts';
import { firstMatchingGlob } from '../config/model-globs.ts';
import type {
  PolicyChange,
  PolicyDecision,
  PolicyRejection,
  PolicyRoute,
  PolicyRule,
  PolicyValue,
} from './outcome.ts';

export type RuleEvaluator = (
  policy: TenantPolicy,
  route: PolicyRoute,
  body: Readonly<Record<string, unknown>>,
  numbers: NumberTexts,
) => PolicyDecision | undefined;

/** The value the request sent, or undefined when it sent nothing or null (the service default applies). */
function sentValue(body: Readonly<Record<string, unknown>>, field: string): unknown {
  const value = body[field];
  return value === null ? undefined : value;
}

function reject(rule: PolicyRule, param: string | undefined, message: string): PolicyRejection {
  return { rule, action: 'rejected', param, message };
}

function defaultNote(sent: unknown, serviceDefault: string | number): string {
  return sent === undefined ? ` (the service default is ${serviceDefault})` : '';
}

/** The rules whose field shares their name and that may rewrite it. */
type RewritingRule = 'safetyLevel' | 'samples' | 'steps' | 'scanResults';

function change(
  rule: RewritingRule,
  action: PolicyChange['action'],
  from: PolicyValue | undefined,
  to: PolicyValue,
): PolicyChange {
  return { rule, field: rule, action, from, to };
}

/**
 * Whether the integer member `field` exceeds `maximum`, judged on the exact value the client wrote (the
 * same reading validation made); undefined when the request sent no integer there.
 */
function integerExceeds(
  body: Readonly<Record<string, unknown>>,
  numbers: NumberTexts,
  field: string,
  maximum: number,
): boolean | undefined {
  const exact = exactNumberAt(numbers, body, field, body[field]);
  if (exact === undefined || !isWholeDecimal(exact)) return undefined;
  return compareDecimals(exact, parseExactDecimal(String(maximum))) > 0;
}

// Deny globs first, then the allow list. The service default model has no name a glob could match, so
// a request without a model is judged by allowServiceDefault alone.
const models: RuleEvaluator = (policy, _route, body) => {
  const rule = policy.models;
  if (rule === undefined) return undefined;
  const model = sentValue(body, 'model');
  if (typeof model !== 'string') {
    return rule.allowServiceDefault
      ? undefined
      : reject(
          'models',
          'model',
          "model is required for this tenant: the service's default model is not allowed",
        );
  }
  const denied = rule.deny === undefined ? undefined : firstMatchingGlob(rule.deny, model);
  if (denied !== undefined)
    return reject('models', 'model', `model must not match ${denied} for this tenant`);
  if (rule.allow === undefined || firstMatchingGlob(rule.allow, model) !== undefined) return undefined;
  return reject(
    'models',
    'model',
    rule.allow.length === 0
      ? 'no model may be named for this tenant'
      : `model must match one of ${rule.allow.join(', ')} for this tenant`,
  );
};

// Video rules only reject: a shorter video than the one asked for is a different product, not a safer
// version of the same one.
const video: RuleEvaluator = (policy, route, body, numbers) => {
  const rule = policy.video;
  if (rule === undefined || route !== 'videos.create') return undefined;
  if (!rule.enabled) return reject('video', undefined, 'video generation is not enabled for this tenant');
  const maximum = rule.maxDurationSeconds;
  if (maximum === undefined || integerExceeds(body, numbers, 'duration', maximum) !== true) return undefined;
  return reject('video', 'duration', `duration must be at most ${maximum} for this tenant`);
};

function isSafetyLevel(value: unknown): value is SafetyLevel {
  return (SAFETY_LEVELS as readonly unknown[]).includes(value);
}

const safetyRank = (level: SafetyLevel) => SAFETY_LEVELS.indexOf(level);

// Images only: the service forces high for every video and ignores the field [doc], so a video always
// meets any minimum. For images the forwarded body always names its level explicitly, so what the
// service applies never depends on its default staying medium.
const safetyLevel: RuleEvaluator = (policy, route, body) => {
  const rule = policy.safetyLevel;
  if (rule === undefined || route !== 'images.create') return undefined;
  const sent = sentValue(body, 'safetyLevel');
  const level = isSafetyLevel(sent) ? sent : IMAGE_DEFAULTS.safetyLevel;
  if (safetyRank(level) < safetyRank(rule.minimum)) {
    if (rule.onViolation === 'reject') {
      return reject(
        'safetyLevel',
        'safetyLevel',
        `safetyLevel must be at least ${rule.minimum} for this tenant${defaultNote(sent, level)}`,
      );
    }
    return change('safetyLevel', 'raised', isSafetyLevel(sent) ? sent : undefined, rule.minimum);
  }
  return sent === level ? undefined : change('safetyLevel', 'set', undefined, level);
};

function maximumRule(field: 'samples' | 'steps'): RuleEvaluator {
  const serviceDefault = IMAGE_DEFAULTS[field];
  return (policy, route, body, numbers) => {
    const rule = policy[field];
    if (rule === undefined || route !== 'images.create') return undefined;
    const sent = sentValue(body, field);
    const sentExceeds = integerExceeds(body, numbers, field, rule.maximum);
    if (!(sentExceeds ?? serviceDefault > rule.maximum)) return undefined;
    if (rule.onViolation === 'reject') {
      return reject(
        field,
        field,
        `${field} must be at most ${rule.maximum} for this tenant${defaultNote(sent, serviceDefault)}`,
      );
    }
    // Validation bounds samples and steps to small integers, so the parsed double is the exact value.
    return change(field, 'clamped', sentExceeds === undefined ? undefined : (sent as number), rule.maximum);
  };
}

const scanResults: RuleEvaluator = (policy, route, body) => {
  if (policy.scanResults?.require !== true || route !== 'images.create') return undefined;
  const sent = sentValue(body, 'scanResults');
  return sent === true
    ? undefined
    : change('scanResults', 'set', typeof sent === 'boolean' ? sent : undefined, true);
};

// Only a rejection can enforce this list: answering in another format than the one asked for would break
// the client reading the result.
const outputTypes: RuleEvaluator = (policy, route, body) => {
  const allowed = policy.outputTypes;
  if (allowed === undefined || route !== 'images.create') return undefined;
  const sent = sentValue(body, 'outputType');
  const outputType = sent ?? IMAGE_DEFAULTS.outputType;
  if ((allowed as readonly unknown[]).includes(outputType)) return undefined;
  return reject(
    'outputTypes',
    'outputType',
    `outputType must be one of ${allowed.join(', ')} for this tenant${defaultNote(sent, IMAGE_DEFAULTS.outputType)}`,
  );
};

/**
 * Every rule, in docs/policy.md's order: models, video, safetyLevel, samples, steps, scanResults,
 * outputTypes.
 */
export const RULES_IN_ORDER: readonly RuleEvaluator[] = [
  models,
  video,
  safetyLevel,
  maximumRule('samples'),
  maximumRule('steps'),
  scanResults,
  outputTypes,
];
