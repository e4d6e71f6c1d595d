// The Helm chart's copies of its single sources. Helm reads only files inside the chart, so
// helm/gengate carries copies of the dashboards (dashboards/*.json), of the alert rules
// (prometheus/gengate.rules.yaml) and of the configuration's JSON Schema (src/config/schema.ts, as the
// `config` member of values.schema.json). `npm run chart:sync` writes them; test/chart/files-in-sync.test.ts
// fails while one differs from its source.
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import prettier from 'prettier';
import { ConfigSchema, HTTP_BASE_URL_FORMAT, PROXY_ADDRESSES_FORMAT } from '../src/config/schema.ts';

const REPOSITORY_ROOT = path.resolve(import.meta.dirname, '..');
const CHART_DIRECTORY = 'helm/gengate';
const DASHBOARDS_SOURCE = 'dashboards';
const DASHBOARDS_COPY = `${CHART_DIRECTORY}/files/dashboards`;
const RULES_SOURCE = 'prometheus/gengate.rules.yaml';
const RULES_COPY = `${CHART_DIRECTORY}/files/gengate.rules.yaml`;
export const VALUES_SCHEMA = `${CHART_DIRECTORY}/values.schema.json`;

// Formats only gengate's own validator knows (it registers them); Helm's validator would refuse the schema.
const GENGATE_ONLY_FORMATS = new Set([HTTP_BASE_URL_FORMAT, PROXY_ADDRESSES_FORMAT]);

/** A file of the chart as it should be (content), or as it should not exist (undefined). */
export interface ChartFile {
  path: string;
  expected: string | undefined;
}

type SchemaNode = Record<string, unknown>;

const isSchemaNode = (value: unknown): value is SchemaNode =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The configuration's schema as values.schema.json holds it. src/config/schema.ts lists members that have
 * a default as required, because Ajv fills defaults in before it checks them; Helm fills nothing in, so
 * there they are optional, as they are in the file gengate reads.
 */
export function chartConfigSchema(): SchemaNode {
  const adapt = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(adapt);
    if (!isSchemaNode(node)) return node;
    const adapted: SchemaNode = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === 'format' && typeof value === 'string' && GENGATE_ONLY_FORMATS.has(value)) continue;
      adapted[key] = adapt(value);
    }
    const properties = node.properties;
    if (Array.isArray(node.required) && isSchemaNode(properties)) {
      const required = node.required.filter(
        (name) =>
          typeof name === 'string' && !(isSchemaNode(properties[name]) && 'default' in properties[name]),
      );
      if (required.length > 0) adapted.required = required;
      else delete adapted.required;
    }
    return adapted;
  };
  // JSON drops TypeBox's symbol-keyed bookkeeping, leaving the plain JSON Schema.
  const plain: unknown = JSON.parse(JSON.stringify(ConfigSchema));
  const schema = adapt(plain) as SchemaNode;
  return {
    $comment:
      'Generated from src/config/schema.ts by `npm run chart:sync`; do not edit (gengate checks the rest).',
    ...schema,
  };
}

async function readIfPresent(relativePath: string): Promise<string | undefined> {
  try {
    return await readFile(path.join(REPOSITORY_ROOT, relativePath), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

async function jsonFilesIn(relativeDirectory: string): Promise<string[]> {
  try {
    const names = await readdir(path.join(REPOSITORY_ROOT, relativeDirectory));
    return names.filter((name) => name.endsWith('.json')).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

async function expectedValuesSchema(): Promise<string> {
  const current = await readIfPresent(VALUES_SCHEMA);
  if (current === undefined) throw new Error(`${VALUES_SCHEMA} is missing`);
  const schema = JSON.parse(current) as { properties: SchemaNode };
  schema.properties.config = chartConfigSchema();
  const options = await prettier.resolveConfig(path.join(REPOSITORY_ROOT, VALUES_SCHEMA));
  return prettier.format(JSON.stringify(schema), { ...options, parser: 'json' });
}

/** Every copy the chart carries, with what it should hold: a copy whose source is gone should not exist. */
export async function chartFiles(): Promise<ChartFile[]> {
  const dashboards = await jsonFilesIn(DASHBOARDS_SOURCE);
  const staleDashboards = (await jsonFilesIn(DASHBOARDS_COPY)).filter((name) => !dashboards.includes(name));
  return [
    ...(await Promise.all(
      dashboards.map(async (name) => ({
        path: `${DASHBOARDS_COPY}/${name}`,
        expected: await readIfPresent(`${DASHBOARDS_SOURCE}/${name}`),
      })),
    )),
    ...staleDashboards.map((name) => ({ path: `${DASHBOARDS_COPY}/${name}`, expected: undefined })),
    { path: RULES_COPY, expected: await readIfPresent(RULES_SOURCE) },
    { path: VALUES_SCHEMA, expected: await expectedValuesSchema() },
  ];
}

/** The chart's files that differ from their sources. */
export async function outOfSyncChartFiles(): Promise<string[]> {
  const files = await chartFiles();
  const actual = await Promise.all(files.map((file) => readIfPresent(file.path)));
  return files.filter((file, index) => actual[index] !== file.expected).map((file) => file.path);
}

async function writeChartFiles(): Promise<void> {
  for (const file of await chartFiles()) {
    const target = path.join(REPOSITORY_ROOT, file.path);
    if (file.expected === undefined) {
      await rm(target, { force: true });
      continue;
    }
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, file.expected);
  }
}

if (import.meta.main) {
  await writeChartFiles();
  const remaining = await outOfSyncChartFiles();
  if (remaining.length > 0) throw new Error(`still out of sync: ${remaining.join(', ')}`);
}
