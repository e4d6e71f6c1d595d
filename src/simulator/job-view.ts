// The GET record of a job, in the documented shape: id, userId, status, statusReason, the echo of the
// request, the stage timestamps (ISO 8601 UTC, null until reached), results with cost and isNSFW once
// completed, and totalCost.
import { isFinished, type Job, type JobStatus, type JobStore } from './jobs.ts';
import { renderPng } from './png.ts';
import { sumUsd } from './pricing.ts';

const STATUS_REASONS = {
  queued: null,
  processing: null,
  completed: null,
  failed: 'generation failed (simulated by the failJob fault)',
  cancelled: 'cancelled at the client’s request',
} as const;

function isoOrNull(epochMs: number | null): string | null {
  return epochMs === null ? null : new Date(epochMs).toISOString();
}

/** Where a result can be downloaded: the simulator itself, without credentials. */
function resultPath(job: Job, index: number): string {
  return `/files/${job.fileToken}/${index}.png`;
}

function resultsOf(job: Job, baseUrl: string) {
  return job.results.map((result, index) => {
    // Video results are a still frame standing in for the video: the simulator renders no video.
    const isNSFW = job.kind === 'image' ? false : null;
    if (job.outputType === 'url')
      return { cost: result.costUsd, isNSFW, url: `${baseUrl}${resultPath(job, index)}` };
    const base64 = renderPng({ seed: result.seed, width: job.width, height: job.height }).toString('base64');
    return job.outputType === 'base64'
      ? { cost: result.costUsd, isNSFW, base64 }
      : { cost: result.costUsd, isNSFW, dataURI: `data:image/png;base64,${base64}` };
  });
}

// Null while the job runs (the figure is not final); nothing is charged for a failed or cancelled job.
function totalCostOf(job: Job, status: JobStatus): number | null {
  if (status === 'completed') return sumUsd(job.results.map((result) => result.costUsd));
  return isFinished(status) ? 0 : null;
}

export function jobView(job: Job, jobs: JobStore, baseUrl: string): Record<string, unknown> {
  const lifecycle = jobs.lifecycleOf(job);
  const completed = lifecycle.status === 'completed';
  return {
    id: job.id,
    userId: job.owner.userId,
    status: lifecycle.status,
    statusReason: STATUS_REASONS[lifecycle.status],
    ...job.echo,
    queuedAt: isoOrNull(lifecycle.queuedAtMs),
    startedAt: isoOrNull(lifecycle.startedAtMs),
    completedAt: isoOrNull(lifecycle.completedAtMs),
    cancelledAt: isoOrNull(lifecycle.cancelledAtMs),
    createdAt: isoOrNull(job.createdAtMs),
    updatedAt: isoOrNull(lifecycle.updatedAtMs),
    results: completed ? resultsOf(job, baseUrl) : [],
    totalCost: totalCostOf(job, lifecycle.status),
  };
}
