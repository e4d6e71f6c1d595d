import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The folders of src/ form a layered graph: a folder may import another only if that one never imports it
// back, directly or through others. Every folder has a kind. Domain folders export plain functions and
// types and know nothing of Fastify: no module of theirs imports Fastify, nor any module that does,
// however many imports away (a domain module importing a glue module that registers a Fastify plugin
// would bring Fastify in). The glue folders (the gateway's hooks and plugins, the servers, load shedding,
// the error handler) and the root files (app.ts, main.ts, cli.ts) compose them, never the other way
// round. The store is one part: its backends (src/store/memory/, src/store/redis/) are reached only
// through src/store/'s own modules, and Redis is spoken nowhere else.

const SOURCE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');
const ROOT_MODULE = '(root)';
const GATEWAY_GLUE = 'gateway';
const FOLDER_KINDS: Record<string, 'domain' | 'glue' | 'tool' | 'declarations'> = {
  auth: 'domain',
  validation: 'domain',
  policy: 'domain',
  ratelimit: 'domain',
  ownership: 'domain',
  usage: 'domain',
  upstream: 'domain',
  json: 'domain',
  maxai: 'domain',
  admission: 'domain',
  store: 'domain',
  routing: 'domain',
  config: 'domain',
  observability: 'domain',
  jobs: 'domain',
  webhooks: 'domain',
  // Hooks, plugins and handlers: they may import Fastify.
  gateway: 'glue',
  admin: 'glue',
  server: 'glue',
  overload: 'glue',
  errors: 'glue',
  // The command line and the stand-in upstream: programs of their own, like the root files.
  cli: 'tool',
  simulator: 'tool',
  // Type declarations only (Fastify's type extensions).
  types: 'declarations',
};
const DOMAIN_FOLDERS = Object.keys(FOLDER_KINDS).filter((folder) => FOLDER_KINDS[folder] === 'domain');

const STORE_FOLDER = 'store';
const STORE_BACKENDS = ['store/memory/', 'store/redis/'];
const REDIS_BACKEND = 'store/redis/';

// `import ... from './x.ts'`, `import type ...`, `export ... from` and side-effect `import './x.ts'`.
const RELATIVE_SPECIFIER = /^\s*(?:import|export)\b[^'"]*?(?:\bfrom\s*)?['"](\.{1,2}\/[^'"]+)['"]/gm;
// The same statements naming a package instead of a file.
const PACKAGE_SPECIFIER = /^\s*(?:import|export)\b[^'"]*?(?:\bfrom\s*)?['"]([^'".][^'"]*)['"]/gm;
const FASTIFY_PACKAGE = /^(?:fastify|fastify-plugin|@fastify\/.+)$/;
const REDIS_CLIENT_PACKAGE = /^ioredis$/;

interface ImportEdge {
  from: string;
  to: string;
  importer: string;
  imported: string;
}

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function folderOf(file: string): string {
  const parts = relative(SOURCE_ROOT, file).split(sep);
  return parts.length === 1 ? ROOT_MODULE : parts[0]!;
}

function importEdges(): ImportEdge[] {
  return sourceFiles(SOURCE_ROOT).flatMap((importer) => {
    const text = readFileSync(importer, 'utf8');
    return [...text.matchAll(RELATIVE_SPECIFIER)].map((match) => {
      const imported = resolve(dirname(importer), match[1]!);
      return {
        from: folderOf(importer),
        to: folderOf(imported),
        importer: relative(SOURCE_ROOT, importer),
        imported: relative(SOURCE_ROOT, imported),
      };
    });
  });
}

/** Each import of a package `name` matches, as `importer -> package`. */
function packageImports(name: RegExp): { folder: string; importer: string; line: string }[] {
  return sourceFiles(SOURCE_ROOT).flatMap((importer) => {
    const text = readFileSync(importer, 'utf8');
    return [...text.matchAll(PACKAGE_SPECIFIER)]
      .map((match) => match[1]!)
      .filter((specifier) => name.test(specifier))
      .map((specifier) => ({
        folder: folderOf(importer),
        importer: relative(SOURCE_ROOT, importer),
        line: `${relative(SOURCE_ROOT, importer)} -> ${specifier}`,
      }));
  });
}

/** Each import of a Fastify package, as `importer -> package`. */
function fastifyImports(): { folder: string; importer: string; line: string }[] {
  return packageImports(FASTIFY_PACKAGE);
}

function folderGraph(edges: ImportEdge[]): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    if (from === to || from === ROOT_MODULE) continue;
    const targets = graph.get(from) ?? new Set<string>();
    targets.add(to);
    graph.set(from, targets);
  }
  return graph;
}

/** Each strongly connected component of more than one folder, found with Tarjan's algorithm. */
function folderCycles(graph: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];

  const visit = (folder: string): void => {
    index.set(folder, index.size);
    lowLink.set(folder, index.get(folder)!);
    stack.push(folder);
    onStack.add(folder);
    for (const next of graph.get(folder) ?? []) {
      if (!index.has(next)) {
        visit(next);
        lowLink.set(folder, Math.min(lowLink.get(folder)!, lowLink.get(next)!));
      } else if (onStack.has(next)) {
        lowLink.set(folder, Math.min(lowLink.get(folder)!, index.get(next)!));
      }
    }
    if (lowLink.get(folder) !== index.get(folder)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== folder);
    if (component.length > 1) cycles.push(component.sort());
  };

  for (const folder of [...graph.keys()].sort()) if (!index.has(folder)) visit(folder);
  return cycles;
}

/** The shortest way back from `folder` to itself, breadth first, as `a -> b -> a`. */
function shortestCycleThrough(folder: string, graph: Map<string, Set<string>>): string {
  const cameFrom = new Map<string, string>();
  const queue = [folder];
  for (let head = 0; head < queue.length; head += 1) {
    const current = queue[head]!;
    for (const next of graph.get(current) ?? []) {
      if (next === folder) {
        const path: string[] = [];
        for (let step = current; step !== folder; step = cameFrom.get(step)!) path.unshift(step);
        return [folder, ...path, folder].join(' -> ');
      }
      if (cameFrom.has(next)) continue;
      cameFrom.set(next, current);
      queue.push(next);
    }
  }
  return '';
}

/** A component's cycles and the imports that hold it together, for the failure message. */
function describeComponent(
  component: string[],
  graph: Map<string, Set<string>>,
  edges: ImportEdge[],
): string {
  const members = new Set(component);
  const cycles = new Set(component.map((folder) => `  ${shortestCycleThrough(folder, graph)}`));
  const imports = edges
    .filter(({ from, to }) => from !== to && members.has(from) && members.has(to))
    .map(({ importer, imported }) => `  ${importer} -> ${imported}`);
  return [`folders in a cycle: ${component.join(', ')}`, ...cycles, 'through:', ...new Set(imports)].join(
    '\n',
  );
}

describe('the import graph of src/', () => {
  const edges = importEdges();

  it('reads the imports of every source file', () => {
    expect(edges.length).toBeGreaterThan(100);
    expect(edges.some(({ importer }) => importer === 'app.ts')).toBe(true);
  });

  it('has no cycle between folders', () => {
    const graph = folderGraph(edges);
    const report = folderCycles(graph).map((component) => describeComponent(component, graph, edges));
    expect(report.join('\n\n')).toBe('');
  });

  it('reaches the store backends only through src/store/', () => {
    const reachedInto = edges
      .filter(
        ({ from, imported }) =>
          from !== STORE_FOLDER && STORE_BACKENDS.some((backend) => imported.startsWith(backend)),
      )
      .map(({ importer, imported }) => `${importer} -> ${imported}`);
    expect([...new Set(reachedInto)]).toEqual([]);
  });

  it('speaks Redis only in src/store/redis/', () => {
    const redisClients = packageImports(REDIS_CLIENT_PACKAGE);
    expect(redisClients.length).toBeGreaterThan(0);
    const elsewhere = redisClients.filter(({ importer }) => !importer.startsWith(REDIS_BACKEND));
    expect(elsewhere.map(({ line }) => line)).toEqual([]);
  });

  it('keeps domain folders free of the gateway glue and the app', () => {
    const reversed = edges
      .filter(({ from }) => DOMAIN_FOLDERS.includes(from))
      .filter(({ to, imported }) => to === GATEWAY_GLUE || imported === 'app.ts')
      .map(({ importer, imported }) => `${importer} -> ${imported}`);
    expect([...new Set(reversed)]).toEqual([]);
  });

  it('finds the Fastify imports of the glue', () => {
    expect(fastifyImports().map(({ line }) => line)).toContain('gateway/request-state.ts -> fastify-plugin');
  });

  it('keeps domain folders free of Fastify, and of every module that imports it', () => {
    expect(fastifyReachedFrom(edges, DOMAIN_FOLDERS)).toEqual([]);
  });

  it('gives every folder of src/ a kind', () => {
    const folders = readdirSync(SOURCE_ROOT, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(folders.filter((folder) => FOLDER_KINDS[folder] === undefined)).toEqual([]);
  });

  it('follows imports to the module that imports Fastify', () => {
    const everyFolder = Object.keys(FOLDER_KINDS);
    const throughAnother = fastifyReachedFrom(edges, everyFolder).filter(
      (chain) => chain.split(' -> ').length > 2,
    );
    expect(throughAnother).toContain('simulator/server.ts -> simulator/app.ts -> fastify');
  });
});

/**
 * For each module of `folders` that reaches Fastify, the shortest chain of imports that does, as
 * `a.ts -> b.ts -> fastify`. Type-only imports count: they tie the module to Fastify's API all the same.
 */
function fastifyReachedFrom(edges: ImportEdge[], folders: readonly string[]): string[] {
  const importsOf = new Map<string, string[]>();
  for (const { importer, imported } of edges) {
    importsOf.set(importer, [...(importsOf.get(importer) ?? []), imported]);
  }
  const fastifyOf = new Map<string, string>();
  for (const { importer, line } of fastifyImports()) {
    if (!fastifyOf.has(importer)) fastifyOf.set(importer, line.slice(line.indexOf(' -> ') + 4));
  }
  const chains: string[] = [];
  for (const start of [...importsOf.keys(), ...fastifyOf.keys()]) {
    if (
      !folders.includes(folderOf(join(SOURCE_ROOT, start))) ||
      chains.some((c) => c.startsWith(`${start} `))
    )
      continue;
    // Breadth first, so the chain reported is a shortest one.
    const cameFrom = new Map<string, string>([[start, '']]);
    const queue = [start];
    for (let head = 0; head < queue.length; head += 1) {
      const current = queue[head]!;
      const fastify = fastifyOf.get(current);
      if (fastify !== undefined) {
        const path = [fastify];
        for (let step = current; step !== ''; step = cameFrom.get(step)!) path.unshift(step);
        chains.push(path.join(' -> '));
        break;
      }
      for (const next of importsOf.get(current) ?? []) {
        if (cameFrom.has(next)) continue;
        cameFrom.set(next, current);
        queue.push(next);
      }
    }
  }
  return [...new Set(chains)].sort();
}
