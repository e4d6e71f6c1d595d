// Reads a V8 .cpuprofile (node --cpu-prof) and ranks where the time went: by function (self time) and by
// origin (gengate's folders, each dependency, Node's internals), so a profile can be summarised in text.
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

export interface CpuProfile {
  nodes: ProfileNode[];
  /** Microseconds, on the profiler's clock. */
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  name: string;
  selfPercent: number;
}

export interface ProfileSummary {
  totalMs: number;
  topFunctions: SelfTime[];
  byOrigin: SelfTime[];
}

const MICROSECONDS_PER_MILLISECOND = 1_000;
const DEPENDENCY = /node_modules\/((?:@[^/]+\/)?[^/]+)/;
// gengate runs from dist/ (compiled src/, same layout): its frames are grouped under their src/ folder,
// and located in the compiled file.
const SOURCE_FOLDER = /\/(src|dist|bench)\/([^/]+)/;
const PROJECT_FILE_URL = /^file:\/\/.*?\/(src|dist|bench)\//;
const asSourceFolder = (folder: string) => (folder === 'dist' ? 'src' : folder);

/** Where a frame's code comes from: a src/ folder, a dependency, Node's internals, or a V8 pseudo-frame. */
export function originOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const dependency = DEPENDENCY.exec(url)?.[1];
  if (dependency !== undefined) return dependency;
  const folder = SOURCE_FOLDER.exec(url);
  if (folder !== null) return `${asSourceFolder(folder[1]!)}/${folder[2]!}`;
  return url;
}

export function shortLocation(url: string, lineNumber: number): string {
  if (url === '') return '';
  const path = DEPENDENCY.test(url)
    ? url.slice(url.lastIndexOf('node_modules/') + 'node_modules/'.length)
    : url.replace(PROJECT_FILE_URL, '$1/');
  return ` ${path}:${lineNumber + 1}`;
}

function ranked(times: Map<string, number>, total: number, count: number): SelfTime[] {
  return [...times]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, time]) => ({ name, selfPercent: (100 * time) / total }));
}

/** Self time in microseconds by function and by origin, of the samples taken within a window. */
interface SelfTimes {
  totalMs: number;
  byFunction: Map<string, number>;
  byOrigin: Map<string, number>;
}

const IDLE = '(idle)';

function selfTimes(profile: CpuProfile, from = -Infinity, to = Infinity): SelfTimes {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const byFunction = new Map<string, number>();
  const byOrigin = new Map<string, number>();
  // Each delta is the time since the sample before; the last sample is at the sum of them all.
  let time = profile.endTime - profile.timeDeltas.reduce((sum, delta) => sum + delta, 0);
  let total = 0;
  profile.samples.forEach((nodeId, index) => {
    const delta = profile.timeDeltas[index] ?? 0;
    time += delta;
    const frame = nodes.get(nodeId)?.callFrame;
    if (frame === undefined || time < from || time > to) return;
    total += delta;
    const name = `${frame.functionName === '' ? '(anonymous)' : frame.functionName}${shortLocation(frame.url, frame.lineNumber)}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + delta);
    const origin = originOf(frame.url, frame.functionName);
    byOrigin.set(origin, (byOrigin.get(origin) ?? 0) + delta);
  });
  return { totalMs: total / MICROSECONDS_PER_MILLISECOND, byFunction, byOrigin };
}

export function summariseCpuProfile(file: string, topCount: number): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const { totalMs, byFunction, byOrigin } = selfTimes(profile);
  const total = totalMs * MICROSECONDS_PER_MILLISECOND;
  return {
    totalMs,
    topFunctions: ranked(byFunction, total, topCount),
    byOrigin: ranked(byOrigin, total, topCount),
  };
}

/**
 * The busy samples (idle left out) taken between `fromEndMs` and `toEndMs` before the profile's end:
 * the time a load ran, when the process exited right after it.
 */
export function cpuTimesInWindow(
  profile: CpuProfile,
  window: { fromEndMs: number; toEndMs: number },
): SelfTimes {
  const times = selfTimes(
    profile,
    profile.endTime - window.fromEndMs * MICROSECONDS_PER_MILLISECOND,
    profile.endTime - window.toEndMs * MICROSECONDS_PER_MILLISECOND,
  );
  const idle = times.byOrigin.get(IDLE) ?? 0;
  times.byOrigin.delete(IDLE);
  times.byFunction.delete(IDLE);
  return { ...times, totalMs: times.totalMs - idle / MICROSECONDS_PER_MILLISECOND };
}
