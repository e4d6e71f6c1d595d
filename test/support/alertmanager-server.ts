// A real Alertmanager (Debian's `prometheus-alertmanager`) for the deployment proof, and the webhook
// receiver it delivers to: both on free loopback ports, clustering off, grouping and waits of a second so
// that a notification follows an alert within seconds. Whoever starts them stops them in teardown.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startMonitoringDaemon } from './monitoring-daemon.ts';

/** What Alertmanager's webhook receiver posts: one notification of a group of alerts. */
export interface WebhookNotification {
  receiver: string;
  status: 'firing' | 'resolved';
  alerts: { status: 'firing' | 'resolved'; labels: Record<string, string> }[];
}

export interface WebhookReceiver {
  url: string;
  /** Notifications received so far, by the path they were posted to. */
  received: Map<string, WebhookNotification[]>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received = new Map<string, WebhookNotification[]>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      const list = received.get(path) ?? [];
      list.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as WebhookNotification);
      received.set(path, list);
      response.writeHead(200).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export interface AlertmanagerOptions {
  /** Routes by label, each to its own receiver: `{ matchers: ['namespace="production"'], receiver: 'production' }`. */
  routes: { matchers: string[]; receiver: string }[];
  /** Receivers by name (each route's, and `default` for the rest): the URL each posts to. */
  webhooks: Record<string, string>;
}

export interface AlertmanagerServer {
  /** host:port, for Prometheus's alerting configuration. */
  address: string;
  stop(): Promise<void>;
}

function alertmanagerConfig(options: AlertmanagerOptions): unknown {
  const wait = '1s';
  return {
    route: {
      receiver: 'default',
      group_by: ['alertname', 'namespace'],
      group_wait: wait,
      group_interval: wait,
      repeat_interval: '1h',
      routes: options.routes,
    },
    receivers: Object.entries(options.webhooks).map(([name, url]) => ({
      name,
      webhook_configs: [{ url, send_resolved: true }],
    })),
  };
}

export async function startAlertmanager(options: AlertmanagerOptions): Promise<AlertmanagerServer> {
  const { port, stop } = await startMonitoringDaemon(
    'prometheus-alertmanager',
    alertmanagerConfig(options),
    ({ configPath, dataPath, port: webPort }) => [
      `--config.file=${configPath}`,
      `--storage.path=${dataPath}`,
      `--web.listen-address=127.0.0.1:${webPort}`,
      // An empty address turns clustering off: no gossip port on every interface.
      '--cluster.listen-address=',
    ],
  );
  return { address: `127.0.0.1:${port}`, stop };
}
