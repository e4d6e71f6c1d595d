// The Helm chart helm/gengate, with the real helm (scripts/test-deploy.sh): lint, render every ci/ value
// set, check every manifest against the Kubernetes API schemas, refuse bad values, and check that what
// the chart renders is a configuration gengate accepts and the alert rules and dashboards of the repo.
// No Kubernetes API server runs here (none is packaged for Debian or npm): schemas stand in for it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  CHART_DIRECTORY,
  CI_VALUE_SETS,
  REPOSITORY_ROOT,
  findManifest,
  helm,
  render,
  template,
  valuesFile,
  type Manifest,
} from './support/helm.ts';
import { schemaProblems, typeProblems } from './support/kubernetes-schemas.ts';

const DEFAULT_VALUES = 'default-values.yaml';
const FULL_VALUES = 'full-values.yaml';
const RULES_SOURCE = path.join(REPOSITORY_ROOT, 'prometheus/gengate.rules.yaml');
const DASHBOARDS_SOURCE = path.join(REPOSITORY_ROOT, 'dashboards');

// Each ci/ set rendered once, when a test first needs it: a set that cannot render fails its own tests.
const renderedSets = new Map<string, Manifest[]>();
function rendered(ciValueSet: string): Manifest[] {
  let manifests = renderedSets.get(ciValueSet);
  if (manifests === undefined) {
    manifests = render(valuesFile(ciValueSet));
    renderedSets.set(ciValueSet, manifests);
  }
  return manifests;
}

const scratch = mkdtempSync(path.join(tmpdir(), 'gengate-chart-'));
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function manifestOf(manifests: readonly Manifest[], kind: string): Manifest {
  const manifest = findManifest(manifests, kind);
  if (manifest === undefined) throw new Error(`no ${kind} rendered`);
  return manifest;
}

interface PodSpec {
  terminationGracePeriodSeconds: number;
  securityContext: object;
  containers: {
    name: string;
    securityContext: object;
    env?: { name: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }[];
    volumeMounts: { name: string; mountPath: string }[];
    lifecycle: { preStop: { sleep: { seconds: number } } };
  }[];
  volumes: { name: string; secret?: { secretName: string } }[];
}

const podTemplate = (manifests: readonly Manifest[]) =>
  (
    manifestOf(manifests, 'Deployment') as unknown as {
      spec: { template: { metadata: { annotations: Record<string, string> }; spec: PodSpec } };
    }
  ).spec.template;

const gengateContainer = (manifests: readonly Manifest[]) =>
  podTemplate(manifests).spec.containers.find((container) => container.name === 'gengate')!;

/** The gengate.yaml the ConfigMap carries, parsed. */
const gengateConfig = (manifests: readonly Manifest[]) =>
  parseYaml((manifestOf(manifests, 'ConfigMap').data as Record<string, string>)['gengate.yaml']!) as {
    store: { replicas: number };
  };

describe('helm lint --strict', () => {
  it.each(CI_VALUE_SETS)('passes with ci/%s', (name) => {
    const result = helm(['lint', '--strict', CHART_DIRECTORY, ...valuesFile(name)]);
    expect(result.stderr + result.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(result.status).toBe(0);
  });
});

describe('the rendered manifests match the Kubernetes API', () => {
  it.each(CI_VALUE_SETS)('ci/%s: types, enums and required fields (OpenAPI schemas)', (name) => {
    expect(schemaProblems(rendered(name))).toEqual([]);
  });

  it('every ci/ set: no field the API does not have, no value of the wrong type (typed literals)', () => {
    expect(typeProblems(Object.fromEntries(CI_VALUE_SETS.map((name) => [name, rendered(name)])))).toEqual([]);
  });

  it('a misspelled field is caught by the typed literals, which the OpenAPI schemas let through', () => {
    const deployment = structuredClone(manifestOf(rendered(DEFAULT_VALUES), 'Deployment'));
    const podSpec = (deployment.spec as { template: { spec: Record<string, unknown> } }).template.spec;
    podSpec.terminationGracePeriodSecond = podSpec.terminationGracePeriodSeconds;
    delete podSpec.terminationGracePeriodSeconds;

    expect(schemaProblems([deployment])).toEqual([]);
    const problems = typeProblems({ misspelled: [deployment] });
    expect(problems).toEqual([
      expect.stringMatching(
        /^misspelled: Deployment prod-gengate \(line \d+ of its literal module\): Object literal may only specify known properties, and '"terminationGracePeriodSecond"' does not exist in type 'IPodSpec'\.$/,
      ),
    ]);
  });

  it('renders every kind the chart can make, under the release name and namespace', () => {
    const kinds = (name: string) =>
      rendered(name)
        .map((manifest) => manifest.kind)
        .sort();
    expect(kinds(FULL_VALUES)).toEqual(
      [
        'ConfigMap',
        ...readdirSafe(path.join(CHART_DIRECTORY, 'files/dashboards')).map(() => 'ConfigMap'),
        'Deployment',
        'HorizontalPodAutoscaler',
        'NetworkPolicy',
        'PodDisruptionBudget',
        'PrometheusRule',
        'Secret',
        'Secret',
        'Service',
        'Service',
        'ServiceAccount',
        'ServiceMonitor',
      ].sort(),
    );
    expect(kinds('existing-secrets-values.yaml')).toEqual([
      'ConfigMap',
      'Deployment',
      'HorizontalPodAutoscaler',
      'PodDisruptionBudget',
      'Service',
      'Service',
      'ServiceAccount',
    ]);
    for (const manifest of rendered(FULL_VALUES)) {
      expect(manifest.metadata.name).toMatch(/^prod-gengate/);
      expect(manifest.metadata.namespace).toBe(
        manifest.kind === 'ConfigMap' && manifest.metadata.name.includes('-dashboard-')
          ? 'monitoring'
          : 'gateways',
      );
    }
  });
});

function readdirSafe(directory: string): string[] {
  return existsSync(directory) ? readdirSync(directory).filter((name) => name.endsWith('.json')) : [];
}

describe('values.schema.json refuses bad values', () => {
  it.each([
    ['an unknown key', ['--set', 'replicaCont=3'], "at '': additional properties 'replicaCont' not allowed"],
    ['a wrong type', ['--set', 'replicaCount=three'], "at '/replicaCount': got string, want integer"],
    [
      'a bad enum',
      ['--set', 'service.type=Ingress'],
      "at '/service/type': value must be one of 'ClusterIP', 'NodePort', 'LoadBalancer'",
    ],
    [
      'an unknown key in the gengate configuration',
      ['--set', 'config.server.bodyLimit=1024'],
      "at '/config/server': additional properties 'bodyLimit' not allowed",
    ],
    [
      'a bad enum in the gengate configuration',
      ['--set', 'config.store.failMode=ajar'],
      "at '/config/store/failMode': value must be one of 'open', 'closed'",
    ],
    [
      'a wrong type in a tenant',
      ['--set-json', 'config.tenants=[{"id":"team-a","credential":"shared","keys":"none"}]'],
      "at '/config/tenants/0/keys': got string, want array",
    ],
  ])('%s', (_, args, message) => {
    const result = template([...valuesFile(DEFAULT_VALUES), ...args]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(message);
  });
});

describe('what a release gets', () => {
  it('refuses to render without a Redis for the redis store, saying what to set', () => {
    const result = template([]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(
      'config.store.kind redis needs a Redis: set redis.url, redis.existingSecret, or config.store.redis.nodes',
    );
  });

  it('refuses a memory store with more than one replica', () => {
    const result = template(['--set', 'config.store.kind=memory']);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(
      'config.store.kind memory keeps limits and request ownership in each replica',
    );
  });

  it('derives the grace period from the preStop sleep, the drain and its margin', () => {
    const manifests = render([
      ...valuesFile(DEFAULT_VALUES),
      '--set',
      'config.server.drainTimeoutMs=90500',
      '--set',
      'drain.preStopSleepSeconds=10',
    ]);
    // 10 s of preStop + 91 s of drain (90.5 s rounded up) + the 5 s margin.
    expect(podTemplate(manifests).spec.terminationGracePeriodSeconds).toBe(106);
  });

  it('refuses a margin shorter than what gengate takes to close after its deadline', () => {
    const result = template([...valuesFile(DEFAULT_VALUES), '--set', 'drain.marginSeconds=2']);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('marginSeconds');
  });

  it('keeps the admin port inside the cluster, whatever the type of the gateway Service', () => {
    const manifests = render([...valuesFile(FULL_VALUES), '--set', 'service.type=LoadBalancer']);
    const services = manifests
      .filter((manifest) => manifest.kind === 'Service')
      .map((service) => {
        const spec = service.spec as { type: string; ports: { name: string }[] };
        return {
          name: service.metadata.name,
          component: service.metadata.labels?.['app.kubernetes.io/component'],
          type: spec.type,
          ports: spec.ports.map((port) => port.name),
        };
      });
    expect(services).toEqual([
      { name: 'prod-gengate-metrics', component: 'metrics', type: 'ClusterIP', ports: ['metrics'] },
      { name: 'prod-gengate', component: undefined, type: 'LoadBalancer', ports: ['http'] },
    ]);
    const monitor = manifestOf(manifests, 'ServiceMonitor') as unknown as {
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string }[] };
    };
    expect(monitor.spec.selector.matchLabels).toEqual({
      'app.kubernetes.io/name': 'gengate',
      'app.kubernetes.io/instance': 'prod',
      'app.kubernetes.io/component': 'metrics',
    });
    expect(monitor.spec.endpoints.map((endpoint) => endpoint.port)).toEqual(['metrics']);
  });

  it('drains: a preStop sleep, then SIGTERM, within the grace period', () => {
    const pod = podTemplate(rendered(DEFAULT_VALUES));
    // 5 s of preStop + the 30 s drain + the 5 s margin.
    expect(pod.spec.terminationGracePeriodSeconds).toBe(40);
    expect(gengateContainer(rendered(DEFAULT_VALUES)).lifecycle).toEqual({
      preStop: { sleep: { seconds: 5 } },
    });
  });

  it('runs as a non-root user with a read-only root, no capabilities and the runtime seccomp profile', () => {
    const pod = podTemplate(rendered(DEFAULT_VALUES));
    expect(pod.spec.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 10001,
      runAsGroup: 10001,
      fsGroup: 10001,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(gengateContainer(rendered(DEFAULT_VALUES)).securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      privileged: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
  });

  it('rolls the pods when the configuration changes, and only then', () => {
    const checksum = (args: string[]) =>
      podTemplate(render([...valuesFile(DEFAULT_VALUES), ...args])).metadata.annotations['checksum/config'];
    const unchanged = checksum([]);
    expect(checksum(['--set', 'image.tag=0.1.1'])).toBe(unchanged);
    expect(checksum(['--set', 'config.logging.level=debug'])).not.toBe(unchanged);
  });

  it('makes a PodDisruptionBudget only when more than one replica runs', () => {
    const autoscalingOff = ['--set', 'autoscaling.enabled=false'];
    const budget = (args: string[]) =>
      findManifest(render([...valuesFile(DEFAULT_VALUES), ...args]), 'PodDisruptionBudget');
    expect(budget([...autoscalingOff, '--set', 'replicaCount=1'])).toBeUndefined();
    expect(budget([...autoscalingOff, '--set', 'replicaCount=2'])).toBeDefined();
    expect(budget(['--set', 'autoscaling.minReplicas=1'])).toBeUndefined();
    expect(budget(['--set', 'autoscaling.minReplicas=2'])).toBeDefined();
  });

  it('divides limits in a fail-open outage by the most replicas that can run, unless told otherwise', () => {
    expect(gengateConfig(rendered(DEFAULT_VALUES)).store.replicas).toBe(10);
    expect(gengateConfig(rendered('autoscaling-off-values.yaml')).store.replicas).toBe(3);
    const explicit = render([...valuesFile(DEFAULT_VALUES), '--set', 'config.store.replicas=4']);
    expect(gengateConfig(explicit).store.replicas).toBe(4);
  });

  it('keeps tokens and the Redis URL given as values in Secrets of its own, never in the ConfigMap', () => {
    const manifests = rendered(FULL_VALUES);
    const secrets = manifests.filter((manifest) => manifest.kind === 'Secret');
    expect(secrets.map((secret) => [secret.metadata.name, secret.data])).toEqual([
      [
        'prod-gengate-redis',
        { 'redis-url': Buffer.from('rediss://:password@redis.example.internal:6380/0').toString('base64') },
      ],
      ['prod-gengate-upstream', { shared: Buffer.from('upstream-token-for-ci').toString('base64') }],
    ]);
    expect(gengateContainer(manifests).env?.[0]).toEqual({
      name: 'REDIS_URL',
      valueFrom: { secretKeyRef: { name: 'prod-gengate-redis', key: 'redis-url' } },
    });
    expect(podTemplate(manifests).spec.volumes).toContainEqual({
      name: 'upstream-credentials',
      secret: { secretName: 'prod-gengate-upstream' },
    });
    const configMap = JSON.stringify(manifestOf(manifests, 'ConfigMap'));
    expect(configMap).not.toContain('upstream-token-for-ci');
    expect(configMap).not.toContain('password');
  });

  it('mounts the upstream tokens as files and passes the Redis URL from the existing Secrets', () => {
    const manifests = rendered('existing-secrets-values.yaml');
    const container = gengateContainer(manifests);
    expect(container.env).toEqual([
      { name: 'REDIS_URL', valueFrom: { secretKeyRef: { name: 'gengate-redis', key: 'url' } } },
    ]);
    expect(container.volumeMounts).toContainEqual({
      name: 'upstream-credentials',
      mountPath: '/var/run/secrets/gengate/upstream',
      readOnly: true,
    });
    expect(podTemplate(manifests).spec.volumes).toContainEqual({
      name: 'upstream-credentials',
      secret: { secretName: 'gengate-upstream' },
    });
  });
});

describe('the release notes', () => {
  it('tell how to reach the gateway and read its metrics', () => {
    // --dry-run=client renders NOTES.txt without a cluster; the missing kubeconfig proves none is used.
    const result = helm([
      'install',
      'prod',
      CHART_DIRECTORY,
      '--namespace',
      'gateways',
      '--dry-run=client',
      '--kubeconfig',
      path.join(scratch, 'no-such-kubeconfig'),
      ...valuesFile('existing-secrets-values.yaml'),
    ]);
    expect(result.status, result.stderr).toBe(0);
    const notes = result.stdout.slice(result.stdout.indexOf('NOTES:'));
    expect(notes).toContain('  http://prod-gengate.gateways.svc:8080\n');
    expect(notes).toContain('  kubectl --namespace gateways port-forward service/prod-gengate 8080:8080\n');
    expect(notes).toContain(
      '  kubectl --namespace gateways port-forward service/prod-gengate-metrics 9090:9090\n',
    );
    expect(notes).toContain('  curl http://127.0.0.1:9090/metrics');
    expect(notes).toContain('No ServiceMonitor was made: scrape port "metrics" (path /metrics)');
    expect(notes).toContain(
      'WARNING: config.server.drainTimeoutMs (30000) is shorter than config.upstream.timeoutMs\n(60000)',
    );
  });

  it('say nothing of the drain when it outlasts the upstream timeout', () => {
    const result = helm([
      'install',
      'prod',
      CHART_DIRECTORY,
      '--dry-run=client',
      '--kubeconfig',
      path.join(scratch, 'no-such-kubeconfig'),
      ...valuesFile('existing-secrets-values.yaml'),
      '--set',
      'config.server.drainTimeoutMs=60000',
    ]);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout.slice(result.stdout.indexOf('NOTES:'))).not.toContain('drainTimeoutMs');
  });
});

describe('the rendered configuration is one gengate accepts', () => {
  it.each(CI_VALUE_SETS)('ci/%s: gengate check-config --skip-credentials', (name) => {
    const configFile = path.join(scratch, `${name}.gengate.yaml`);
    writeFileSync(
      configFile,
      (manifestOf(rendered(name), 'ConfigMap').data as Record<string, string>)['gengate.yaml']!,
    );
    const result = spawnSync(
      process.execPath,
      ['src/cli.ts', 'check-config', '--config', configFile, '--skip-credentials'],
      { cwd: REPOSITORY_ROOT, encoding: 'utf8', env: { PATH: process.env.PATH } },
    );
    expect(result.status, result.stdout + result.stderr).toBe(0);
  });
});

describe("the chart ships the repository's alert rules and dashboards", () => {
  it('the PrometheusRule holds the groups of prometheus/gengate.rules.yaml', () => {
    if (!existsSync(RULES_SOURCE)) {
      expect.fail(
        "prometheus/gengate.rules.yaml is missing: the alert rules are the PrometheusRule's source",
      );
    }
    const source = parseYaml(readFileSync(RULES_SOURCE, 'utf8')) as { groups: unknown };
    const rule = manifestOf(rendered(FULL_VALUES), 'PrometheusRule') as unknown as {
      spec: { groups: unknown };
    };
    expect(rule.spec.groups).toEqual(source.groups);
  });

  it('one dashboard ConfigMap per dashboards/*.json, holding it unchanged, for the Grafana sidecar', () => {
    const sources = readdirSafe(DASHBOARDS_SOURCE);
    if (sources.length === 0)
      expect.fail("dashboards/*.json are missing: they are the dashboard ConfigMaps' source");
    const dashboards = rendered(FULL_VALUES).filter((manifest) =>
      manifest.metadata.name.includes('-dashboard-'),
    );
    expect(
      dashboards.map((manifest) => ({
        labels: manifest.metadata.labels?.grafana_dashboard,
        data: manifest.data,
      })),
    ).toEqual(
      sources.map((name) => ({
        labels: '1',
        data: { [name]: readFileSync(path.join(DASHBOARDS_SOURCE, name), 'utf8') },
      })),
    );
  });
});
