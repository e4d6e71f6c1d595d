// Starts one of the Prometheus project's daemons (prometheus, prometheus-alertmanager) for a test: its
// configuration in a fresh folder, its HTTP port a free one on loopback, ready once `/-/ready` answers.
// stop() ends it and removes the folder.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';
import { waitFor } from './wait-for.ts';

const STARTUP_TIMEOUT_MS = 30_000;

export interface MonitoringDaemon {
  port: number;
  url: string;
  stop: () => Promise<void>;
}

/**
 * `command` with the arguments `args` gives for the configuration file, its data folder and its port;
 * the configuration is written as JSON, which is YAML.
 */
export async function startMonitoringDaemon(
  command: string,
  config: unknown,
  args: (paths: { configPath: string; dataPath: string; port: number }) => string[],
): Promise<MonitoringDaemon> {
  const dir = await mkdtemp(join(tmpdir(), `gengate-${command}-`));
  const configPath = join(dir, 'config.yml');
  await writeFile(configPath, JSON.stringify(config));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(command, args({ configPath, dataPath: join(dir, 'data'), port }), {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const log: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => log.push(chunk.toString('utf8')));
  // No binary on the PATH, say: reported by the wait below instead of an unhandled 'error' event.
  let spawnError: Error | undefined;
  child.once('error', (error) => {
    spawnError = error;
  });

  async function stop(): Promise<void> {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  }

  async function ready(): Promise<boolean> {
    if (spawnError !== undefined) throw spawnError;
    if (child.exitCode !== null) throw new Error(`${command} exited with ${child.exitCode}: ${log.join('')}`);
    try {
      return (await fetch(`${url}/-/ready`)).ok;
    } catch {
      return false;
    }
  }

  try {
    await waitFor(`${command} on ${port}`, ready, STARTUP_TIMEOUT_MS);
  } catch (error) {
    await stop();
    throw error;
  }
  return { port, url, stop };
}
