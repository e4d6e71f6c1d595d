// What writing the request log line costs, by destination (docs/decisions/0065-log-lines-written-in-batches.md):
// pino logging request-like lines through a child logger, paced at a given rate by a 1 ms timer, to a
// file, for a few seconds; prints the process's CPU (user + system, every thread) per line. Run it pinned
// to one core, as a replica runs, and interleave the modes:
//
//   taskset -c 1 node bench/log-write-cost.ts --mode per-line|batched --rate 2000 --seconds 4
import { mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';

const { values } = parseArgs({
  options: {
    mode: { type: 'string', default: 'batched' },
    rate: { type: 'string', default: '2000' },
    seconds: { type: 'string', default: '4' },
  },
  strict: true,
});
const directory = mkdtempSync(join(tmpdir(), 'gengate-log-cost-'));
const fd = openSync(join(directory, 'log'), 'w');
// `per-line`: the destination of docs/decisions/0010; `batched`: src/main.ts's.
const destination =
  values.mode === 'per-line'
    ? pino.destination({ fd, sync: false })
    : pino.destination({ fd, sync: false, minLength: 8_192, periodicFlush: 250 });
const logger = pino({ base: { service: 'gengate' } }, destination);
const fields = {
  generationId: '3f0c8a52-6b1d-4e2a-9c47-5d8e1f2a7b90',
  tenant: 'bench',
  route: 'images.create',
  method: 'POST',
  status: 200,
  keyPrefix: 'ggk_AbCd',
  clientAddress: '127.0.0.1',
  limit: 'requests',
  limitDecision: 'allowed',
  durationMs: 1.234,
  upstreamMs: 0.456,
};
const perMillisecond = Number(values.rate) / 1_000;
const durationMs = Number(values.seconds) * 1_000;
let sent = 0;
const start = performance.now();
const cpuAtStart = process.cpuUsage();
const timer = setInterval(() => {
  const elapsed = performance.now() - start;
  for (const due = Math.floor(elapsed * perMillisecond); sent < due; sent += 1) {
    logger.child({ reqId: `req-${sent}` }).info(fields, 'request');
  }
  if (elapsed < durationMs) return;
  clearInterval(timer);
  const cpu = process.cpuUsage(cpuAtStart);
  process.stdout.write(
    `${values.mode} at ${values.rate} lines/s: ${sent} lines, ` +
      `CPU ${((cpu.user + cpu.system) / sent).toFixed(2)} µs per line\n`,
  );
  logger.flush();
  rmSync(directory, { recursive: true, force: true });
}, 1);
