// Runs a command of the project as an operator runs it, in a child process, and collects what it wrote.
import { spawn } from 'node:child_process';

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Added to this process's environment; REDIS_URL is cleared unless given. */
  env?: Record<string, string>;
  cwd?: string;
}

export function runCommand(
  command: string,
  args: string[],
  options: RunOptions = {},
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { ...process.env, REDIS_URL: '', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      resolve({ code, stdout, stderr });
    });
  });
}

/** `npm run gengate -- ARGS`; --silent keeps npm's own banner and warnings out of the command's output. */
export function runGengate(args: string[], options: RunOptions = {}): Promise<CommandResult> {
  return runCommand('npm', ['run', '--silent', 'gengate', '--', ...args], options);
}

/** `node src/cli.ts ARGS` with the project's Node.js, as the npm script runs it, without npm's start-up. */
export function runCli(args: string[], options: RunOptions = {}): Promise<CommandResult> {
  return runCommand(process.execPath, ['src/cli.ts', ...args], options);
}

/** `node src/main.ts ARGS`, the gateway process, for its argument handling (it exits before listening). */
export function runMain(args: string[], options: RunOptions = {}): Promise<CommandResult> {
  return runCommand(process.execPath, ['src/main.ts', ...args], options);
}
