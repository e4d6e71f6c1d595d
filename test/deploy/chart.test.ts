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
  parseManifests,
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

// The umbrella chart of ci/umbrella (gengate as a subchart, by file://), its dependency built and rendered
// once, when a test first needs it.
const UMBRELLA_DIRECTORY = path.join(CHART_DIRECTORY, 'ci/umbrella');
let umbrellaManifests: Manifest[] | undefined;
function renderedUmbrella(): Manifest[] {
  if (umbrellaManifests === undefined) {
    for (const args of [
      ['dependency', 'update', '--skip-refresh', UMBRELLA_DIRECTORY],
      ['lint', '--strict', UMBRELLA_DIRECTORY],
    ]) {
      const result = helm(args);
      if (result.status !== 0)
        throw new Error(`helm ${args.join(' ')} failed:\n${result.stdout}${result.stderr}`);
    }
    const result = helm(['template', 'prod', UMBRELLA_DIRECTORY, '--namespace', 'gateways']);
    if (result.status !== 0) throw new Error(`helm template of ci/umbrella failed:\n${result.stderr}`);
    umbrellaManifests = parseManifests(result.stdout);
  }
  return umbrellaManifests;
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
    resources: object;
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

  it('every ci/ set and the umbrella chart: no field the API does not have, no value of the wrong type (typed literals)', () => {
    const sets = Object.fromEntries(CI_VALUE_SETS.map((name) => [name, rendered(name)]));
    expect(typeProblems({ ...sets, 'ci/umbrella': renderedUmbrella() })).toEqual([]);
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
        'Pod',
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
      'Pod',
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

  // Protects the tail (decision 0077): without a CPU limit no CFS quota throttles the container while the
  // collector's threads run beside the event loop, and a pod that is not Guaranteed gets no exclusive
  // core from a static CPU manager, which those threads would have to share with the event loop.
  it('requests CPU and memory, limits memory only: the collector may use a spare core', () => {
    expect(gengateContainer(rendered(DEFAULT_VALUES)).resources).toEqual({
      requests: { cpu: '500m', memory: '256Mi' },
      limits: { memory: '512Mi' },
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
    expect(notes).toContain('  helm test prod --namespace gateways\n');
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

describe("the chart ships the repository's alert rules and dashboards, made its release's", () => {
  // full-values.yaml keeps the default selector: the namespace and the metrics Service's name.
  const release = { namespace: 'gateways', job: 'prod-gengate-metrics' };

  it('the PrometheusRule holds the rules of prometheus/gengate.rules.yaml with the release selected', () => {
    if (!existsSync(RULES_SOURCE)) {
      expect.fail(
        "prometheus/gengate.rules.yaml is missing: the alert rules are the PrometheusRule's source",
      );
    }
    const source = parseYaml(readFileSync(RULES_SOURCE, 'utf8')) as {
      groups: { rules: { expr: string }[] }[];
    };
    const selector = `namespace="${release.namespace}", job="${release.job}"`;
    const expected = source.groups.map((group) => ({
      ...group,
      rules: group.rules.map((rule) => ({
        ...rule,
        expr: rule.expr.replaceAll('job="gengate"', selector),
      })),
    }));
    const rule = manifestOf(rendered(FULL_VALUES), 'PrometheusRule') as unknown as {
      spec: { groups: unknown };
    };
    expect(rule.spec.groups).toEqual(expected);
  });

  it('one dashboard ConfigMap per dashboards/*.json, opening on the release, for the Grafana sidecar', () => {
    const sources = readdirSafe(DASHBOARDS_SOURCE);
    if (sources.length === 0)
      expect.fail("dashboards/*.json are missing: they are the dashboard ConfigMaps' source");
    const dashboards = rendered(FULL_VALUES).filter((manifest) =>
      manifest.metadata.name.includes('-dashboard-'),
    );
    const opensOn = (name: string) => ({
      text: release[name as keyof typeof release],
      value: release[name as keyof typeof release],
    });
    expect(
      dashboards.map((manifest) => ({
        labels: manifest.metadata.labels?.grafana_dashboard,
        data: Object.fromEntries(
          Object.entries(manifest.data as Record<string, string>).map(([name, text]) => [
            name,
            JSON.parse(text) as unknown,
          ]),
        ),
      })),
    ).toEqual(
      sources.map((name) => {
        const dashboard = JSON.parse(readFileSync(path.join(DASHBOARDS_SOURCE, name), 'utf8')) as {
          templating: { list: { name: string; current?: unknown }[] };
        };
        for (const variable of dashboard.templating.list) {
          if (variable.name in release) variable.current = opensOn(variable.name);
        }
        return { labels: '1', data: { [name]: dashboard } };
      }),
    );
  });
});

// docs/deploy.md: a chart that composes (subchart, names), is locked down (network policy, OpenShift), exposes
// the gateway port only, tests itself, and reaches a Redis with TLS and a password from Secrets.
const EXPOSED_VALUES = 'exposed-values.yaml';
const OPENSHIFT_VALUES = 'openshift-values.yaml';
const REDIS_TLS_VALUES = 'redis-tls-values.yaml';

describe('as a subchart of an umbrella chart (ci/umbrella, by file://)', () => {
  it('passes lint --strict and renders with the global values Helm passes every subchart', () => {
    const manifests = renderedUmbrella();
    expect(manifestOf(manifests, 'Deployment').metadata.name).toBe('prod-gengate');
    expect(manifests.map((manifest) => manifest.kind).sort()).toEqual(
      rendered(DEFAULT_VALUES)
        .map((manifest) => manifest.kind)
        .sort(),
    );
  });

  it('renders manifests the Kubernetes API accepts (the typed literals are checked with the ci/ sets)', () => {
    expect(schemaProblems(renderedUmbrella())).toEqual([]);
  });

  it('is left out of the packaged chart, which it depends on (a copy would contain itself)', () => {
    const packaged = helm(['package', CHART_DIRECTORY, '--destination', scratch]);
    expect(packaged.status, packaged.stderr).toBe(0);
    const archive = /saved it to: (\S+\.tgz)/.exec(packaged.stdout)![1]!;
    const listing = spawnSync('tar', ['-tzf', archive], { encoding: 'utf8' });
    expect(listing.status).toBe(0);
    const files = listing.stdout.trimEnd().split('\n');
    expect(files).toContain('gengate/templates/tests/test-connection.yaml');
    expect(files.filter((file) => file.startsWith('gengate/ci/umbrella'))).toEqual([]);
  });
});

// Kubernetes object names of these kinds are DNS-1123 labels; a Service's must also start with a letter.
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

describe('names', () => {
  // Every object the chart can make, at once.
  const everything = [...valuesFile(FULL_VALUES), ...valuesFile(EXPOSED_VALUES)];
  const LONG_RELEASE = 'payments-platform-image-generation-gateway-eu-west-1a';
  const LONG_OVERRIDE = 'payments-platform-image-generation-gateway-eu-west-1-production';

  it.each([
    ['a 53-character release name', LONG_RELEASE, []],
    ['a 63-character fullnameOverride', 'prod', ['--set', `fullnameOverride=${LONG_OVERRIDE}`]],
  ])('are valid and distinct with %s', (_, release, args) => {
    expect(LONG_RELEASE).toHaveLength(53);
    expect(LONG_OVERRIDE).toHaveLength(63);
    const result = helm([
      'template',
      release,
      CHART_DIRECTORY,
      '--namespace',
      'gateways',
      ...everything,
      ...args,
    ]);
    expect(result.status, result.stderr).toBe(0);
    const manifests = parseManifests(result.stdout);
    const invalid = manifests.filter(
      ({ kind, metadata: { name } }) =>
        name.length > 63 || !DNS_LABEL.test(name) || (kind === 'Service' && !/^[a-z]/.test(name)),
    );
    expect(invalid.map(({ kind, metadata }) => `${kind} ${metadata.name}`)).toEqual([]);
    const identities = manifests.map(({ kind, metadata }) => `${kind}/${metadata.name}`);
    expect(new Set(identities).size).toBe(identities.length);
    const dashboards = manifests.filter(({ metadata }) => metadata.name.includes('-dashboard-'));
    expect(dashboards).toHaveLength(readdirSafe(path.join(CHART_DIRECTORY, 'files/dashboards')).length);
    const badLabels = manifests.flatMap(({ kind, metadata }) =>
      Object.entries(metadata.labels ?? {})
        .filter(([, value]) => value.length > 63 || !LABEL_VALUE.test(value))
        .map(([label, value]) => `${kind} ${metadata.name}: ${label}=${value}`),
    );
    expect(badLabels).toEqual([]);
    // What the pods and Services refer to is what the chart made.
    const names = new Set(identities);
    const template = podTemplate(manifests).spec;
    expect(names).toContain(
      `ConfigMap/${(template.volumes[0] as unknown as { configMap: { name: string } }).configMap.name}`,
    );
    expect(names).toContain(`Secret/${gengateContainer(manifests).env![0]!.valueFrom!.secretKeyRef.name}`);
  });
});

describe('network policy', () => {
  it('refuses a ServiceMonitor whose Prometheus the policy would block, saying what to set', () => {
    const result = template([...valuesFile(FULL_VALUES), '--set-json', 'networkPolicy.metricsFrom=[]']);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(
      'networkPolicy.enabled with metrics.serviceMonitor.enabled needs networkPolicy.metricsFrom: the peers your Prometheus scrapes from',
    );
  });

  it('restricts egress to DNS, Redis, the upstream and the extra rules when asked', () => {
    const policy = manifestOf(rendered(EXPOSED_VALUES), 'NetworkPolicy') as unknown as {
      spec: { policyTypes: string[]; egress: unknown[]; ingress: { from?: unknown[] }[] };
    };
    expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec.egress).toEqual([
      {
        ports: [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
        to: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
            podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
          },
        ],
      },
      { ports: [{ port: 6380, protocol: 'TCP' }], to: [{ ipBlock: { cidr: '10.20.0.0/16' } }] },
      {
        ports: [{ port: 443, protocol: 'TCP' }],
        to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'] } }],
      },
      {
        to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'renderer' } } }],
        ports: [{ port: 443, protocol: 'TCP' }],
      },
    ]);
    // The helm test pod may still reach the gateway port.
    expect(policy.spec.ingress[0]!.from).toContainEqual({
      podSelector: {
        matchLabels: { 'app.kubernetes.io/instance': 'prod', 'app.kubernetes.io/component': 'test' },
      },
    });
    const defaultPolicy = manifestOf(rendered(FULL_VALUES), 'NetworkPolicy') as unknown as {
      spec: { policyTypes: string[]; egress?: unknown };
    };
    expect(defaultPolicy.spec.policyTypes).toEqual(['Ingress']);
    expect(defaultPolicy.spec.egress).toBeUndefined();
  });
});

describe('helm test', () => {
  interface TestPod {
    metadata: { annotations: Record<string, string>; labels: Record<string, string> };
    spec: {
      restartPolicy: string;
      containers: {
        image: string;
        command: string[];
        args: string[];
        env: { name: string; value: string }[];
      }[];
    };
  }

  it('runs the gengate image itself against the Services of the release', () => {
    const manifests = rendered(FULL_VALUES);
    const pod = manifestOf(manifests, 'Pod') as unknown as TestPod & Manifest;
    expect(pod.metadata.name).toBe('prod-gengate-test');
    expect(pod.metadata.annotations['helm.sh/hook']).toBe('test');
    expect(pod.spec.restartPolicy).toBe('Never');
    const [container] = pod.spec.containers;
    expect(pod.spec.containers).toHaveLength(1);
    expect(container!.image).toBe(
      (
        manifestOf(manifests, 'Deployment') as unknown as {
          spec: { template: { spec: { containers: { image: string }[] } } };
        }
      ).spec.template.spec.containers[0]!.image,
    );
    expect(container!.command).toEqual(['node', '-e']);
    expect(container!.args).toEqual([readFileSync(path.join(CHART_DIRECTORY, 'files/helm-test.js'), 'utf8')]);
    expect(container!.env).toEqual([
      { name: 'GENGATE_ADMIN_URL', value: 'http://prod-gengate-metrics.gateways.svc:9090' },
      { name: 'GENGATE_GATEWAY_URL', value: 'http://prod-gengate.gateways.svc:8080' },
    ]);
  });

  it('is never selected by the Services, which would send it traffic', () => {
    const manifests = rendered(FULL_VALUES);
    const labels = (manifestOf(manifests, 'Pod') as unknown as TestPod).metadata.labels;
    for (const service of manifests.filter((manifest) => manifest.kind === 'Service')) {
      const selector = (service.spec as { selector: Record<string, string> }).selector;
      expect(Object.entries(selector).every(([key, value]) => labels[key] === value)).toBe(false);
    }
  });

  it('can be left out', () => {
    expect(
      findManifest(render([...valuesFile(DEFAULT_VALUES), '--set', 'tests.enabled=false']), 'Pod'),
    ).toBeUndefined();
  });
});

describe('Ingress and HTTPRoute', () => {
  it('send traffic to the gateway port of the gateway Service only', () => {
    const manifests = rendered(EXPOSED_VALUES);
    const ingress = manifestOf(manifests, 'Ingress') as unknown as { spec: unknown };
    expect(ingress.spec).toEqual({
      ingressClassName: 'nginx',
      tls: [{ secretName: 'gengate-tls', hosts: ['gengate.example.com'] }],
      rules: [
        {
          host: 'gengate.example.com',
          http: {
            paths: [
              {
                path: '/v1',
                pathType: 'Prefix',
                backend: { service: { name: 'prod-gengate', port: { name: 'http' } } },
              },
            ],
          },
        },
      ],
    });
    const route = manifestOf(manifests, 'HTTPRoute') as unknown as { spec: unknown };
    expect(route.spec).toEqual({
      parentRefs: [{ name: 'public', namespace: 'gateways-infra', sectionName: 'https' }],
      hostnames: ['gengate.example.com'],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/v1' } }],
          timeouts: { request: '75s' },
          backendRefs: [{ name: 'prod-gengate', port: 8080 }],
        },
      ],
    });
  });

  it('refuses an HTTPRoute without a Gateway to attach to', () => {
    const result = template([...valuesFile(DEFAULT_VALUES), '--set', 'httpRoute.enabled=true']);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('httpRoute.enabled needs httpRoute.parentRefs');
  });
});

describe('the process, the rollout and the platform', () => {
  it('passes NODE_OPTIONS and extra Node.js flags before gengate script', () => {
    const container = gengateContainer(rendered(OPENSHIFT_VALUES)) as unknown as {
      command: string[];
      args: string[];
      env: { name: string; value?: string }[];
    };
    expect(container.env).toContainEqual({ name: 'NODE_OPTIONS', value: '--max-old-space-size=512' });
    expect([...container.command, ...container.args]).toEqual([
      'node',
      '--max-semi-space-size=16',
      '--heap-growing-percent=50',
      '--heap-growing-percent=30',
      '/app/dist/main.js',
      '--config',
      '/etc/gengate/gengate.yaml',
    ]);
    // Without extraArgs the image's own command runs.
    expect(gengateContainer(rendered(DEFAULT_VALUES))).not.toHaveProperty('args');
  });

  it('takes the update strategy and the PodDisruptionBudget unhealthy-pod eviction policy from values', () => {
    const strategy = (manifests: Manifest[]) =>
      (manifestOf(manifests, 'Deployment').spec as { strategy: unknown }).strategy;
    const evictionPolicy = (manifests: Manifest[]) =>
      (manifestOf(manifests, 'PodDisruptionBudget').spec as { unhealthyPodEvictionPolicy?: string })
        .unhealthyPodEvictionPolicy;
    expect(strategy(rendered(DEFAULT_VALUES))).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: '25%', maxUnavailable: 0 },
    });
    expect(strategy(rendered(OPENSHIFT_VALUES))).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
    expect(evictionPolicy(rendered(DEFAULT_VALUES))).toBe('AlwaysAllow');
    expect(evictionPolicy(rendered(OPENSHIFT_VALUES))).toBe('IfHealthyBudget');
  });

  it('leaves uid, gid and fsGroup to an OpenShift-style platform, forced or detected', () => {
    const openshiftContext = { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } };
    const detected = render([...valuesFile(DEFAULT_VALUES), '--api-versions', 'security.openshift.io/v1']);
    for (const manifests of [rendered(OPENSHIFT_VALUES), detected]) {
      expect(podTemplate(manifests).spec.securityContext).toEqual(openshiftContext);
      expect((manifestOf(manifests, 'Pod').spec as { securityContext: unknown }).securityContext).toEqual(
        openshiftContext,
      );
      expect(gengateContainer(manifests).securityContext).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        privileged: false,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      });
    }
    const disabled = render([
      ...valuesFile(DEFAULT_VALUES),
      '--api-versions',
      'security.openshift.io/v1',
      '--set',
      'openshift.adaptSecurityContext=disabled',
    ]);
    expect(podTemplate(disabled).spec.securityContext).toMatchObject({ runAsUser: 10001, fsGroup: 10001 });
  });
});

describe('Redis with TLS and a password', () => {
  it('refuses a URL carrying a password in config.store.redis.url, naming redis.existingSecret', () => {
    const result = template([
      ...valuesFile(DEFAULT_VALUES),
      '--set',
      'config.store.redis.url=rediss://:hunter2@redis.example.internal:6380/0',
    ]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(
      'config.store.redis.url carries a password, which the ConfigMap would hold in plain text: put the URL in a Secret and name it with redis.existingSecret',
    );
    expect(result.stderr).not.toContain('hunter2');
    // Without one (a user name is no secret) it stays in the configuration.
    const plain = render([
      ...valuesFile(DEFAULT_VALUES),
      '--set',
      'config.store.redis.url=rediss://gengate@redis.example.internal:6380/0',
    ]);
    expect(gengateConfig(plain)).toMatchObject({
      store: { redis: { url: 'rediss://gengate@redis.example.internal:6380/0' } },
    });
  });

  it('gives a Cluster the password and CA from Secrets as files the configuration names', () => {
    const manifests = rendered(REDIS_TLS_VALUES);
    expect((gengateConfig(manifests) as unknown as { store: { redis: unknown } }).store.redis).toMatchObject({
      username: 'gengate',
      passwordFile: '/var/run/secrets/gengate/redis/password',
      tls: { caFile: '/var/run/secrets/gengate/redis/ca.crt', serverName: 'redis-cluster.redis.svc' },
    });
    expect(podTemplate(manifests).spec.volumes).toContainEqual({
      name: 'redis-credentials',
      projected: {
        sources: [
          { secret: { name: 'redis-cluster-auth', items: [{ key: 'password', path: 'password' }] } },
          { secret: { name: 'redis-cluster-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        ],
      },
    });
    expect(gengateContainer(manifests).volumeMounts).toContainEqual({
      name: 'redis-credentials',
      mountPath: '/var/run/secrets/gengate/redis',
      readOnly: true,
    });
    // A single Redis behind rediss:// with a private CA.
    const single = rendered(EXPOSED_VALUES);
    expect((gengateConfig(single) as unknown as { store: { redis: unknown } }).store.redis).toMatchObject({
      tls: { caFile: '/var/run/secrets/gengate/redis/ca.crt' },
    });
  });
});
