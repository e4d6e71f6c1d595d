// A real Prometheus (Debian's `prometheus` package) for deployment checks: it scrapes the targets it is
// given every second, evaluates the rule files every second, and serves its HTTP API on a free loopback
// port. Whoever starts one stops it in teardown.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from './free-port.ts';
import { waitFor } from './wait-for.ts';

/** Scrapes and rule evaluations this often, so a proof sees a change within seconds. */
export const PROMETHEUS_INTERVAL_SECONDS = 1;
const STARTUP_TIMEOUT_MS = 30_000;

export interface PrometheusOptions {
  jobName: string;
  /** host:port of each target's metrics endpoint (GET /metrics). */
  targets: string[];
  ruleFiles: string[];
}

export interface PrometheusServer {
  url: string;
  /** The `data` of a successful answer of the HTTP API (GET, or POST with `form`); throws otherwise. */
  api<T>(path: string, form?: Record<string, string>): Promise<T>;
  stop(): Promise<void>;
}

interface ApiAnswer<T> {
  status: 'success' | 'error';
  data: T;
  error?: string;
}

function configText(options: PrometheusOptions): string {
  const interval = `${PROMETHEUS_INTERVAL_SECONDS}s`;
  return JSON.stringify({
    global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
    rule_files: options.ruleFiles.map((path) => resolve(path)),
    scrape_configs: [{ job_name: options.jobName, static_configs: [{ targets: options.targets }] }],
  });
}

export async function startPrometheus(options: PrometheusOptions): Promise<PrometheusServer> {
  const dir = await mkdtemp(join(tmpdir(), 'gengate-prometheus-'));
  const configPath = join(dir, 'prometheus.yml');
  // JSON is YAML: the file needs no YAML writer.
  await writeFile(configPath, configText(options));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${configPath}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
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
    if (child.exitCode !== null) throw new Error(`prometheus exited with ${child.exitCode}: ${log.join('')}`);
    try {
      return (await fetch(`${url}/-/ready`)).ok;
    } catch {
      return false;
    }
  }

  try {
    await waitFor(`prometheus on ${port}`, ready, STARTUP_TIMEOUT_MS);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    async api<T>(path: string, form?: Record<string, string>) {
      const response = await fetch(
        `${url}${path}`,
        form === undefined ? {} : { method: 'POST', body: new URLSearchParams(form) },
      );
      const answer = (await response.json()) as ApiAnswer<T>;
      if (answer.status !== 'success') throw new Error(`${path}: ${answer.error ?? response.status}`);
      return answer.data;
    },
    stop,
  };
}
