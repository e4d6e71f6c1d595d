// Child processes of the benchmark: started pinned to a core, watched, measured (RSS) and always stopped,
// even when the run fails or is interrupted.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, openSync, closeSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { connect } from 'node:net';
import { delimiter, join } from 'node:path';
export { freePort } from '../test/support/free-port.ts';

/** wrk and the helpers (upstream, Redis) share this core; the proxy under test has the other alone. */
export const LOAD_CORE = 0;
export const PROXY_CORE = 1;

const STOP_GRACE_MS = 5_000;
const POLL_INTERVAL_MS = 50;
const STDERR_TAIL_BYTES = 4_096;
const BYTES_PER_KIB = 1_024;
const VM_RSS_LINE = /^VmRSS:\s+(\d+) kB$/m;

// nginx and redis-server live in sbin, which an unprivileged user's PATH often leaves out.
const SYSTEM_BINARY_DIRECTORIES = ['/usr/sbin', '/sbin'];

export function findExecutable(name: string): string | undefined {
  for (const directory of [...(process.env.PATH ?? '').split(delimiter), ...SYSTEM_BINARY_DIRECTORIES]) {
    const candidate = join(directory, name);
    if (directory !== '' && existsSync(candidate)) return candidate;
  }
  return undefined;
}

const canPin = availableParallelism() > PROXY_CORE && findExecutable('taskset') !== undefined;

/** Whether processes are pinned: taskset is installed and there is a core beside the load core. */
export function pinningAvailable(): boolean {
  return canPin;
}

export interface BenchProcess {
  name: string;
  pid: number;
  /** The last few KB of its stderr, for error messages. */
  stderrTail(): string;
  /** Resolves once it has exited. */
  readonly exited: Promise<void>;
  isRunning(): boolean;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
// Last resort when the runner dies from an exception or a signal: SIGTERM lets nginx's master take its
// workers down with it, and lets Redis shut down cleanly.
process.on('exit', () => {
  for (const child of running) child.kill('SIGTERM');
});

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
  /** Where its stdout goes; discarded when absent. */
  stdoutFile?: string;
}

export function spawnPinned(
  name: string,
  core: number,
  command: string,
  args: readonly string[],
  options: SpawnOptions = {},
): BenchProcess {
  const stdout = options.stdoutFile === undefined ? 'ignore' : openSync(options.stdoutFile, 'a');
  // taskset execs the command, so the child's pid is the program's own (what RSS is read from).
  const [file, argv] = canPin ? ['taskset', ['-c', String(core), command, ...args]] : [command, [...args]];
  const child = spawn(file, argv, { stdio: ['ignore', stdout, 'pipe'], env: options.env ?? process.env });
  if (typeof stdout === 'number') closeSync(stdout);
  if (child.pid === undefined) throw new Error(`${name}: could not start ${command}`);
  running.add(child);
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_TAIL_BYTES);
  });
  let alive = true;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      alive = false;
      running.delete(child);
      resolve();
    });
  });
  return {
    name,
    pid: child.pid,
    stderrTail: () => stderr,
    exited,
    isRunning: () => alive,
    async stop() {
      if (!alive) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** Runs a command to completion (pinned like spawnPinned) and returns its stdout. */
export async function runPinned(
  core: number,
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const [file, argv] = canPin ? ['taskset', ['-c', String(core), command, ...args]] : [command, [...args]];
  const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], env });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  }).finally(() => running.delete(child));
  if (code !== 0) throw new Error(`${command} exited with ${String(code)}: ${stderr.trim()}`);
  return stdout;
}

/**
 * Lets `owner`'s helper threads (V8's collector and compiler threads, libuv's pool) run on the load core
 * too, its main thread staying alone on the proxy core: how a replica without a CPU limit runs on a node
 * of several cores. A thread started later inherits the main thread's core alone; call it once the
 * target is ready (gengate's libuv pool has started by then: it read its configuration file). Nothing
 * when not pinned (the run's pinning note says so).
 */
export function spareCoreForHelpers(owner: BenchProcess): void {
  if (!canPin) return;
  execFileSync('taskset', [
    '--all-tasks',
    '--pid',
    '--cpu-list',
    `${LOAD_CORE},${PROXY_CORE}`,
    String(owner.pid),
  ]);
  // A thread's id is the process's id for its main thread only.
  execFileSync('taskset', ['--pid', '--cpu-list', String(PROXY_CORE), String(owner.pid)]);
}

export function pinningNote(spareCore = false): string {
  if (!canPin) {
    return 'not pinned (taskset missing or fewer than 2 cores): figures are not comparable with pinned runs';
  }
  const proxies = spareCore
    ? `proxy's event loop on core ${PROXY_CORE}, its helper threads on cores ${LOAD_CORE} and ${PROXY_CORE}`
    : `proxy on core ${PROXY_CORE}`;
  return `${proxies}; load generator, upstream and Redis on core ${LOAD_CORE}`;
}

function portAccepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      resolve(false);
    });
  });
}

/** Polls `ready` until it holds; fails early with the process's stderr when the process dies first. */
export async function waitUntil(
  what: string,
  ready: () => Promise<boolean>,
  timeoutMs: number,
  owner?: BenchProcess,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (owner !== undefined && !owner.isRunning()) {
      throw new Error(`${owner.name} exited before ${what}:\n${owner.stderrTail()}`);
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
}

export function waitForPort(owner: BenchProcess, port: number, timeoutMs: number): Promise<void> {
  return waitUntil(`${owner.name} to listen on ${port}`, () => portAccepts(port), timeoutMs, owner);
}

function statusRssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = VM_RSS_LINE.exec(status)?.[1];
  return kib === undefined ? 0 : Number(kib) * BYTES_PER_KIB;
}

function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .split(' ')
      .filter((text) => text !== '')
      .map(Number);
  } catch {
    return [];
  }
}

// utime and stime, the 14th and 15th fields of /proc/<pid>/stat, counted after the command's closing
// parenthesis (the command itself may contain spaces).
const STAT_UTIME_FIELD = 11;
const STAT_STIME_FIELD = 12;
const CLOCK_TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

function statCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[STAT_UTIME_FIELD]) + Number(fields[STAT_STIME_FIELD])) / CLOCK_TICKS_PER_SECOND;
}

/**
 * CPU time used so far by a process (all its threads) and its direct children, in seconds: user and
 * system time, so a request's share of system calls counts too. Steadier than requests per second on a
 * shared VM, whose other guests slow every process alike (docs/performance.md, "Method").
 */
export function cpuSeconds(pid: number): number {
  try {
    return [pid, ...childPids(pid)].reduce((total, each) => total + statCpuSeconds(each), 0);
  } catch {
    return Number.NaN;
  }
}

/** Resident memory of a process and its direct children (nginx's master and workers), in bytes. */
export function rssBytes(pid: number): number {
  try {
    return [pid, ...childPids(pid)].reduce((total, each) => total + statusRssBytes(each), 0);
  } catch {
    return 0;
  }
}
