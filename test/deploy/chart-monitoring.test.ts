// The chart on a cluster shared with other teams (ci/monitoring-values.yaml: a release named imagegw,
// alerts aggregated by cluster, runbooks hosted elsewhere, the live reload mode), and what a configuration
// change does in each reload mode (docs/deploy.md, "Changing the configuration"). The alert rules the chart
// renders are unit-tested with promtool in alert-rules.test.ts.
import { describe, expect, it } from 'vitest';
import { findManifest, render, valuesFile, type Manifest } from './support/helm.ts';

const MONITORING_VALUES = 'monitoring-values.yaml';
const DEFAULT_VALUES = 'default-values.yaml';

interface PodTemplate {
  metadata: { annotations: Record<string, string> };
  spec: {
    containers: { name: string; volumeMounts: { name: string; mountPath: string; subPath?: string }[] }[];
  };
}

const podTemplate = (manifests: readonly Manifest[]) =>
  (findManifest(manifests, 'Deployment') as unknown as { spec: { template: PodTemplate } }).spec.template;

const configMount = (manifests: readonly Manifest[]) =>
  podTemplate(manifests)
    .spec.containers.find((container) => container.name === 'gengate')!
    .volumeMounts.filter((mount) => mount.name === 'config');

interface Dashboard {
  templating: { list: { name: string; current?: { value: string }; hide?: number }[] };
  panels: { links?: { title: string; url: string }[] }[];
}

describe('a release whose name does not contain gengate, on a Prometheus that sees several clusters', () => {
  const manifests = render(valuesFile(MONITORING_VALUES));

  it('selects its series by its namespace and the job its ServiceMonitor gives: its metrics Service', () => {
    const monitor = findManifest(manifests, 'ServiceMonitor') as unknown as {
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string }[] };
    };
    const service = manifests.find(
      (manifest) =>
        manifest.kind === 'Service' &&
        manifest.metadata.labels?.['app.kubernetes.io/component'] === 'metrics',
    )!;
    expect(service.metadata).toMatchObject({ name: 'imagegw-metrics', namespace: 'gateways' });
    expect(monitor.spec.selector.matchLabels).toMatchObject({ 'app.kubernetes.io/component': 'metrics' });

    const rule = findManifest(manifests, 'PrometheusRule') as unknown as {
      spec: { groups: { rules: { alert: string; expr: string }[] }[] };
    };
    const storeDegraded = rule.spec.groups
      .flatMap((group) => group.rules)
      .find((each) => each.alert === 'GengateStoreDegraded')!;
    expect(storeDegraded.expr).toBe(
      'max by (namespace, job, cluster) (gengate_store_degraded{namespace="gateways", job="imagegw-metrics"}) > 0',
    );
  });

  it('ships dashboards that open on it, show the cluster variable and link to the runbooks where they are', () => {
    const dashboards = manifests
      .filter((manifest) => manifest.metadata.name.startsWith('imagegw-dashboard-'))
      .flatMap((manifest) => Object.values(manifest.data as Record<string, string>))
      .map((text) => JSON.parse(text) as Dashboard);
    expect(dashboards).toHaveLength(3);
    for (const dashboard of dashboards) {
      const variables = new Map(dashboard.templating.list.map((variable) => [variable.name, variable]));
      expect(variables.get('namespace')?.current?.value).toBe('gateways');
      expect(variables.get('job')?.current?.value).toBe('imagegw-metrics');
      expect(variables.get('cluster')?.hide).toBe(0);
      const links = dashboard.panels.flatMap((panel) => panel.links ?? []);
      expect(links.length).toBeGreaterThan(0);
      for (const link of links) {
        expect(link.url).toMatch(
          /^https:\/\/runbooks\.example\.internal\/gengate\/operations\.html#gengate[a-z]+$/,
        );
      }
    }
  });

  it('keeps the cluster variable hidden when the alerts do not aggregate by cluster', () => {
    const dashboard = render(valuesFile(DEFAULT_VALUES).concat(['--set', 'metrics.dashboards.enabled=true']))
      .filter((manifest) => manifest.metadata.name.includes('-dashboard-'))
      .map(
        (manifest) => JSON.parse(Object.values(manifest.data as Record<string, string>)[0]!) as Dashboard,
      )[0]!;
    expect(dashboard.templating.list.find((variable) => variable.name === 'cluster')?.hide).toBe(2);
  });
});

describe('a configuration change', () => {
  it('by default rolls out as new pods: the file is mounted by subPath, which the kubelet never updates', () => {
    const checksum = (args: string[]) =>
      podTemplate(render([...valuesFile(DEFAULT_VALUES), ...args])).metadata.annotations['checksum/config'];
    expect(checksum(['--set', 'config.logging.level=debug'])).not.toBe(checksum([]));
    expect(configMount(render(valuesFile(DEFAULT_VALUES)))).toEqual([
      { name: 'config', mountPath: '/etc/gengate/gengate.yaml', subPath: 'gengate.yaml', readOnly: true },
    ]);
  });

  it('in the live mode reaches the running pods instead: the folder is mounted and the pods do not roll', () => {
    const live = ['--set', 'configReload.mode=live'];
    const template = (args: string[]) =>
      podTemplate(render([...valuesFile(DEFAULT_VALUES), ...live, ...args]));
    expect(template([]).metadata.annotations['checksum/config']).toBeUndefined();
    expect(template(['--set', 'config.logging.level=debug'])).toEqual(template([]));
    expect(configMount(render([...valuesFile(DEFAULT_VALUES), ...live]))).toEqual([
      { name: 'config', mountPath: '/etc/gengate', readOnly: true },
    ]);
  });

  it('refuses a reload mode it does not know', () => {
    expect(() => render([...valuesFile(DEFAULT_VALUES), '--set', 'configReload.mode=sometimes'])).toThrow(
      /configReload\.mode/,
    );
  });
});
