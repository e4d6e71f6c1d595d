// Processes a test starts (Redis servers, gateways, nginx) die with the test process: a suite whose
// afterAll never ran, or failed before stopping them, would otherwise leave them running on the machine
// (a failed start in a fault suite left five Redis servers behind).
import type { ChildProcess } from 'node:child_process';

const running = new Map<ChildProcess, NodeJS.Signals>();

function killRunning(): void {
  for (const [child, signal] of running) child.kill(signal);
}

process.on('exit', killRunning);
// A test worker ended by a signal (a run interrupted, or ended by its runner) emits no 'exit': its
// children go first, then the signal, raised again, takes its usual course.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
  process.once(signal, () => {
    killRunning();
    process.kill(process.pid, signal);
  });
}

/**
 * Sends `child` `signal` when this process exits, unless it has exited first. SIGKILL by default (a
 * frozen Redis would not act on another); nginx wants SIGTERM, which its master passes to its workers.
 */
export function killedOnExit<T extends ChildProcess>(child: T, signal: NodeJS.Signals = 'SIGKILL'): T {
  running.set(child, signal);
  child.once('exit', () => running.delete(child));
  return child;
}
