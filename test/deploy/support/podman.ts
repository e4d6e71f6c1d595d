// Podman with a configuration and a storage of its own, for the deployment checks: they never read or
// change the machine's podman settings, images or containers. The storage lives in the user's cache
// folder, so the images it holds (the stand-in base image above all) are reused from run to run.
import { execFile, spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

// A build's log may outgrow execFile's default of 1 MB.
const MAX_OUTPUT_BYTES = 64 << 20;

/**
 * runc, because crun (podman's other runtime) fails on this kernel's cgroup layout. Ulimits below any
 * machine's hard limits: podman's defaults (a million open files) exceed what a sandboxed root may set,
 * and runc then refuses to start the container ("error setting rlimit type 7"). cgroupfs and a file for
 * events, because the machine runs no systemd.
 */
const CONTAINERS_CONF = `[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
`;

export interface CommandOutput {
  stdout: string;
  stderr: string;
}

export interface Podman {
  /** Runs `podman ARGS…` and returns its output; rejects with the output when it exits non-zero. */
  run(args: string[]): Promise<CommandOutput>;
  /** Runs `podman ARGS…` with `input` piped to its standard input (e.g. `podman import -`). */
  runWithInput(args: string[], input: NodeJS.ReadableStream): Promise<CommandOutput>;
}

function podmanHome(): string {
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'gengate', 'podman');
}

export async function privatePodman(home = podmanHome()): Promise<Podman> {
  const storageConf = `[storage]
driver = "overlay"
graphroot = "${join(home, 'storage')}"
runroot = "${join(home, 'run')}"
`;
  await mkdir(home, { recursive: true });
  await writeFile(join(home, 'containers.conf'), CONTAINERS_CONF);
  await writeFile(join(home, 'storage.conf'), storageConf);
  const env = {
    ...process.env,
    CONTAINERS_CONF: join(home, 'containers.conf'),
    CONTAINERS_STORAGE_CONF: join(home, 'storage.conf'),
  };
  // libpod's run-time state (exit codes, events, its boot marker) beside the storage, not in /run/libpod.
  const global = ['--tmpdir', join(home, 'tmp')];
  return {
    async run(args) {
      return execFileAsync('podman', [...global, ...args], { env, maxBuffer: MAX_OUTPUT_BYTES });
    },
    async runWithInput(args, input) {
      const child = spawn('podman', [...global, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
      child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
      // A podman that exits early closes its input; its exit code says why.
      child.stdin.on('error', () => undefined);
      input.pipe(child.stdin);
      const code = await new Promise<number | null>((resolve, reject) => {
        child.on('error', reject);
        child.on('close', resolve);
      });
      const output = { stdout: Buffer.concat(stdout).toString(), stderr: Buffer.concat(stderr).toString() };
      if (code !== 0) throw new Error(`podman ${args.join(' ')} exited with ${code}: ${output.stderr}`);
      return output;
    },
  };
}
