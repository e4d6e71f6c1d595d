// What the idempotency fingerprint of a create costs (decision 0038): for the plain submission and the
// worst body shapes of a given size, the gateway's own parse (parseJsonBody) beside the fingerprint
// (submissionFingerprint), each the median of interleaved rounds after untimed warm-up rounds. Both hold
// the event loop: the parse when the body arrives, the fingerprint when the answer is stored and on
// each repeat.
//
//   node bench/fingerprint-cost.ts [--bytes N] [--rounds N]
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { submissionFingerprint } from '../src/ownership/submission-fingerprint.ts';
import { parseJsonBody } from '../src/validation/json-body.ts';
import { HOSTILE_SHAPES, PLAIN_SHAPE } from './hostile-bodies.ts';
import { median } from './measure.ts';
import { formatTable } from './report.ts';

const WARMUP_ROUNDS = 5;
const { values } = parseArgs({
  options: { bytes: { type: 'string', default: '1048576' }, rounds: { type: 'string', default: '9' } },
});
const bytes = Number(values.bytes);
const rounds = Number(values.rounds);

function timed(work: () => unknown): number {
  const start = performance.now();
  work();
  return performance.now() - start;
}

const rows: string[][] = [];
for (const shape of [PLAIN_SHAPE, ...HOSTILE_SHAPES]) {
  const raw = Buffer.from(shape.build(bytes));
  let body;
  try {
    body = parseJsonBody(raw);
  } catch {
    continue; // refused bodies are never stored, so never fingerprinted
  }
  const parsed = body;
  const parse: number[] = [];
  const fingerprint: number[] = [];
  for (let round = 0; round < WARMUP_ROUNDS + rounds; round += 1) {
    const parseMs = timed(() => parseJsonBody(raw));
    const fingerprintMs = timed(() => submissionFingerprint('images.create', parsed));
    if (round < WARMUP_ROUNDS) continue;
    parse.push(parseMs);
    fingerprint.push(fingerprintMs);
  }
  const [parseMs, fingerprintMs] = [median(parse), median(fingerprint)];
  rows.push([shape.id, parseMs.toFixed(2), fingerprintMs.toFixed(2), (fingerprintMs / parseMs).toFixed(1)]);
}
process.stdout.write(`bodies of ${bytes} bytes, median of ${rounds} rounds\n`);
process.stdout.write(`${formatTable(['shape', 'parse ms', 'fingerprint ms', 'ratio'], rows)}\n`);
