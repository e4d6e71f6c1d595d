// The real helm binary (scripts/test-deploy.sh puts it on the PATH) and the manifests it renders.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

export const REPOSITORY_ROOT = path.resolve(import.meta.dirname, '../../..');
export const CHART_DIRECTORY = path.join(REPOSITORY_ROOT, 'helm/gengate');
export const RELEASE_NAME = 'prod';
export const RELEASE_NAMESPACE = 'gateways';

/** The value sets CI renders: helm/gengate/ci/*.yaml, by file name. */
export const CI_VALUE_SETS = readdirSync(path.join(CHART_DIRECTORY, 'ci'))
  .filter((name) => name.endsWith('.yaml'))
  .sort();

export interface HelmResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function helm(args: readonly string[]): HelmResult {
  const result = spawnSync('helm', args, { cwd: REPOSITORY_ROOT, encoding: 'utf8' });
  if (result.error !== undefined) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** `-f helm/gengate/ci/<name>` for a CI value set. */
export const valuesFile = (ciValueSet: string): string[] => [
  '-f',
  path.join(CHART_DIRECTORY, 'ci', ciValueSet),
];

/** `helm template` of the chart with these arguments (value files, --set ...), or the failure's stderr. */
export function template(args: readonly string[]): HelmResult {
  return helm(['template', RELEASE_NAME, CHART_DIRECTORY, '--namespace', RELEASE_NAMESPACE, ...args]);
}

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

/** The objects of a rendered stream, in order (empty documents dropped). */
export function parseManifests(stream: string): Manifest[] {
  return parseAllDocuments(stream)
    .map((document) => {
      if (document.errors.length > 0) throw new Error(document.errors.map(String).join('\n'));
      return document.toJS() as Manifest | null;
    })
    .filter((manifest): manifest is Manifest => manifest !== null);
}

/** The manifests of a render that must succeed. */
export function render(args: readonly string[]): Manifest[] {
  const result = template(args);
  if (result.status !== 0) throw new Error(`helm template ${args.join(' ')} failed:\n${result.stderr}`);
  return parseManifests(result.stdout);
}

export function findManifest(manifests: readonly Manifest[], kind: string): Manifest | undefined {
  return manifests.find((manifest) => manifest.kind === kind);
}
