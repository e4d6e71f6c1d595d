// Rendered manifests checked against the Kubernetes API (and Prometheus Operator) schemas, without an
// API server (none is packaged for Debian or npm). Two checks, because neither is enough alone:
// - kubernetes-models' validate() runs the OpenAPI schemas: types, enums, required fields, formats; but
//   its schemas allow unknown fields, so a misspelled field passes and the API server would drop it.
// - The TypeScript compiler type-checks each manifest as an object literal of the model's interface:
//   excess-property checks refuse every field the API does not have, at any depth.
import path from 'node:path';
import ts from 'typescript';
import { ConfigMap, Pod, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { HTTPRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1';
import {
  PrometheusRule,
  ServiceMonitor,
} from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { REPOSITORY_ROOT, type Manifest } from './helm.ts';

interface KubernetesModel {
  /** The module that declares the model, as an import specifier. */
  module: string;
  /** Its class (runs the schema) and the name of its interface (for the type check). */
  model: new (data: never) => { validate(): void };
  interfaceName: string;
}

const KUBERNETES_MODELS: Readonly<Record<string, KubernetesModel>> = {
  'v1/ConfigMap': { module: 'kubernetes-models/v1', model: ConfigMap, interfaceName: 'IConfigMap' },
  'v1/Secret': { module: 'kubernetes-models/v1', model: Secret, interfaceName: 'ISecret' },
  'v1/Service': { module: 'kubernetes-models/v1', model: Service, interfaceName: 'IService' },
  'v1/Pod': { module: 'kubernetes-models/v1', model: Pod, interfaceName: 'IPod' },
  'v1/ServiceAccount': {
    module: 'kubernetes-models/v1',
    model: ServiceAccount,
    interfaceName: 'IServiceAccount',
  },
  'apps/v1/Deployment': {
    module: 'kubernetes-models/apps/v1',
    model: Deployment,
    interfaceName: 'IDeployment',
  },
  'autoscaling/v2/HorizontalPodAutoscaler': {
    module: 'kubernetes-models/autoscaling/v2',
    model: HorizontalPodAutoscaler,
    interfaceName: 'IHorizontalPodAutoscaler',
  },
  'policy/v1/PodDisruptionBudget': {
    module: 'kubernetes-models/policy/v1',
    model: PodDisruptionBudget,
    interfaceName: 'IPodDisruptionBudget',
  },
  'networking.k8s.io/v1/NetworkPolicy': {
    module: 'kubernetes-models/networking.k8s.io/v1',
    model: NetworkPolicy,
    interfaceName: 'INetworkPolicy',
  },
  'networking.k8s.io/v1/Ingress': {
    module: 'kubernetes-models/networking.k8s.io/v1',
    model: Ingress,
    interfaceName: 'IIngress',
  },
  'gateway.networking.k8s.io/v1/HTTPRoute': {
    module: '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1',
    model: HTTPRoute,
    interfaceName: 'IHTTPRoute',
  },
  'monitoring.coreos.com/v1/ServiceMonitor': {
    module: '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1',
    model: ServiceMonitor,
    interfaceName: 'IServiceMonitor',
  },
  'monitoring.coreos.com/v1/PrometheusRule': {
    module: '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1',
    model: PrometheusRule,
    interfaceName: 'IPrometheusRule',
  },
};

function modelOf(manifest: Manifest): KubernetesModel {
  const model = KUBERNETES_MODELS[`${manifest.apiVersion}/${manifest.kind}`];
  if (model === undefined) throw new Error(`no schema known for ${manifest.apiVersion} ${manifest.kind}`);
  return model;
}

const describe = (manifest: Manifest) => `${manifest.kind} ${manifest.metadata.name}`;

/** Problems the OpenAPI schema finds (types, enums, required fields), one line per manifest. */
export function schemaProblems(manifests: readonly Manifest[]): string[] {
  const problems: string[] = [];
  for (const manifest of manifests) {
    // Any object goes in: its shape is what validate() checks.
    const Model = modelOf(manifest).model as new (data: Manifest) => { validate(): void };
    try {
      new Model(manifest).validate();
    } catch (error) {
      problems.push(`${describe(manifest)}: ${(error as Error).message}`);
    }
  }
  return problems;
}

/**
 * Problems the TypeScript compiler finds with each manifest written as a literal of its model's interface:
 * a field the API does not have (a misspelling), or a value of the wrong type. Each set of manifests
 * becomes one in-memory module, so a problem names its set and manifest.
 */
export function typeProblems(manifestSets: Readonly<Record<string, readonly Manifest[]>>): string[] {
  // In-memory files placed in the repository, so the models resolve from its node_modules.
  const sources = new Map<string, string>();
  const manifestNames = new Map<string, string[]>();
  for (const [setName, manifests] of Object.entries(manifestSets)) {
    const fileName = path.join(REPOSITORY_ROOT, 'test/deploy', `rendered-${sources.size}.ts`);
    const models = manifests.map(modelOf);
    const imports = [...new Set(models.map((model) => model.module))].map((module) => {
      const names = [...new Set(models.filter((m) => m.module === module).map((m) => m.interfaceName))];
      return `import type { ${names.join(', ')} } from '${module}';`;
    });
    const declarations = manifests.map(
      (manifest, index) =>
        `export const manifest${index}: ${models[index]!.interfaceName} = ${JSON.stringify(manifest, null, 2)};`,
    );
    sources.set(fileName, [...imports, ...declarations].join('\n'));
    manifestNames.set(
      fileName,
      manifests.map((manifest) => `${setName}: ${describe(manifest)}`),
    );
  }

  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const readFromDisk = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, ...rest) => {
    const source = sources.get(fileName);
    return source === undefined
      ? readFromDisk(fileName, languageVersion, ...rest)
      : ts.createSourceFile(fileName, source, languageVersion, true);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (fileName) => sources.has(fileName) || fileExists(fileName);
  const program = ts.createProgram([...sources.keys()], options, host);

  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const file = diagnostic.file;
    if (file === undefined || diagnostic.start === undefined) return message;
    // Which manifest: the last `export const manifestN` at or before the problem.
    const before = file.text.slice(0, diagnostic.start);
    const index = Number([...before.matchAll(/export const manifest(\d+):/g)].at(-1)?.[1] ?? -1);
    const { line } = file.getLineAndCharacterOfPosition(diagnostic.start);
    const name = manifestNames.get(file.fileName)?.[index] ?? file.fileName;
    return `${name} (line ${line + 1} of its literal module): ${message}`;
  });
}
