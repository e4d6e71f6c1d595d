// A real Prometheus (Debian's `prometheus` package) for deployment checks: it scrapes the targets it is
// given every second, evaluates the rule files every second, and serves its HTTP API on a free loopback
// port. Whoever starts one stops it in teardown.
import { resolve } from 'node:path';
import { startMonitoringDaemon } from './monitoring-daemon.ts';

/** Scrapes and rule evaluations this often, so a proof sees a change within seconds. */
export const PROMETHEUS_INTERVAL_SECONDS = 1;

export interface ScrapeJob {
  jobName: string;
  /** host:port of each target's metrics endpoint (GET /metrics). */
  targets: string[];
  /** Labels on every series of the targets, as Kubernetes service discovery adds `namespace`. */
  labels?: Record<string, string>;
}

export interface PrometheusOptions extends ScrapeJob {
  /** Other services the same Prometheus scrapes. */
  otherJobs?: ScrapeJob[];
  ruleFiles: string[];
  /** host:port of an Alertmanager the alerts are sent to. */
  alertmanager?: string;
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

function prometheusConfig(options: PrometheusOptions): unknown {
  const interval = `${PROMETHEUS_INTERVAL_SECONDS}s`;
  return {
    global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
    rule_files: options.ruleFiles.map((path) => resolve(path)),
    scrape_configs: [options, ...(options.otherJobs ?? [])].map((job) => ({
      job_name: job.jobName,
      static_configs: [{ targets: job.targets, labels: job.labels ?? {} }],
    })),
    ...(options.alertmanager === undefined
      ? {}
      : { alerting: { alertmanagers: [{ static_configs: [{ targets: [options.alertmanager] }] }] } }),
  };
}

export async function startPrometheus(options: PrometheusOptions): Promise<PrometheusServer> {
  const { url, stop } = await startMonitoringDaemon(
    'prometheus',
    prometheusConfig(options),
    ({ configPath, dataPath, port }) => [
      `--config.file=${configPath}`,
      `--storage.tsdb.path=${dataPath}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
  );
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
