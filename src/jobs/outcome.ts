// A job's end as its poll answer shows it (docs/budgets.md): cancelled (`status` cancelled or
// `cancelledAt` set), failed, or completed with the `totalCost` the upstream reports; anything else is not
// an end yet. The record's bytes are read once, without parsing its results (src/usage/record-summary.ts).
import { readRecordSummary } from '../usage/record-summary.ts';
import type { Settlement } from './book.ts';
import { toMicroUsd } from '../usage/pricing.ts';

/** The settlement a 2xx poll answer about `requestId` calls for, or undefined while the job runs. */
export function settlementOfRecord(body: Buffer): Settlement | undefined {
  const summary = readRecordSummary(body);
  const record = body.toString('utf8');
  if (summary.status === 'cancelled' || summary.cancelledAt !== undefined) {
    return { outcome: 'cancelled', record };
  }
  if (summary.status === 'failed') return { outcome: 'failed', record };
  if (
    summary.status === 'completed' ||
    (summary.completedAt !== undefined && summary.totalCost !== undefined)
  ) {
    return { outcome: 'completed', reportedMicroUsd: toMicroUsd(summary.totalCost ?? 0), record };
  }
  return undefined;
}
