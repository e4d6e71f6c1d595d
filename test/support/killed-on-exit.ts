// Processes a test starts (Redis servers, gateways, nginx) die with the test process: a suite whose
// afterAll never ran, or failed before stopping them, would otherwise leave them running on the machine
// (a failed start in a fault suite left five Redis servers behind).
import type { ChildProcess } from 'node:child_process';

const running = new Map<ChildProcess, NodeJS.Signals>();
process.on('exit', () => {
  for (const [child, signal] of running) child.kill(signal);
});

/**
 * Sends `child` `signal` when this process exits, unless it has exited first. SIGKILL by default (a
 * frozen Redis would not act on another); nginx wants SIGTERM, which its master passes to its workers.
 */
export function killedOnExit<T extends ChildProcess>(child: T, signal: NodeJS.Signals = 'SIGKILL'): T {
  running.set(child, signal);
  child.once('exit', () => running.delete(child));
  return child;
}
