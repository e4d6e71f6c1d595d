// Every value a module of src/ exports is imported somewhere (src/, test/, bench/, scripts/ or
// dashboards/): an export nothing imports is either dead code or a constant that only its own module
// needs, and either way a reader wonders who else depends on it. Types are left out: a function's
// parameter types are exported for its callers even when they never name them.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const REPOSITORY = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const IMPORTING_FOLDERS = ['src', 'test', 'bench', 'scripts', 'dashboards'];
const EXPORTED_VALUE = /^export\s+(?:async\s+)?(?:const|let|function|class|enum)\s+(\w+)/gm;
const NAMED_IMPORT = /(?:import|export)\s+(?:type\s+)?\{([^}]*)\}\s*from\s*['"](\.{1,2}\/[^'"]+)['"]/g;
const NAMESPACE_IMPORT = /import\s+\*\s+as\s+\w+\s+from\s*['"](\.{1,2}\/[^'"]+)['"]/g;

function typeScriptFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) return [];
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return typeScriptFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

test('every value src/ exports is imported somewhere', () => {
  const files = IMPORTING_FOLDERS.flatMap((folder) => typeScriptFiles(join(REPOSITORY, folder)));
  // `module#name` for each named import, `module#*` for a namespace import.
  const imported = new Set<string>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const [, names = '', specifier = ''] of text.matchAll(NAMED_IMPORT)) {
      const module = resolve(dirname(file), specifier);
      for (const name of names.split(',')) {
        const local = name
          .replace(/^\s*type\s+/, '')
          .split(' as ')[0]!
          .trim();
        if (local !== '') imported.add(`${module}#${local}`);
      }
    }
    for (const [, specifier = ''] of text.matchAll(NAMESPACE_IMPORT)) {
      imported.add(`${resolve(dirname(file), specifier)}#*`);
    }
  }
  const unused = files
    .filter((file) => relative(REPOSITORY, file).startsWith('src/'))
    .flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(EXPORTED_VALUE)]
        .map(([, name]) => name!)
        .filter((name) => !imported.has(`${file}#${name}`) && !imported.has(`${file}#*`))
        .map((name) => `${relative(REPOSITORY, file)}: ${name}`),
    );
  expect(unused).toEqual([]);
});
