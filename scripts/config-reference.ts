// The options reference of docs/configuration.md, generated from src/config/schema.ts: each option's
// type, range and default from the schema itself, its description from CONFIG_OPTION_DOCS beside it.
// `npm run config:reference` rewrites the part of the page between the markers;
// test/config/reference.test.ts fails while the page differs from what this writes, and while an option
// of the schema has no description.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CONFIG_OPTION_DOCS, ConfigSchema } from '../src/config/schema.ts';

const REPOSITORY_ROOT = path.resolve(import.meta.dirname, '..');
export const CONFIGURATION_PAGE = 'docs/configuration.md';
export const REFERENCE_START =
  '<!-- generated from src/config/schema.ts by `npm run config:reference`; do not edit by hand -->';
export const REFERENCE_END = '<!-- end of the generated reference -->';
const TENANTS = 'tenants[].';
const LINE_WIDTH = 110;
const CONTINUATION = '  ';

type SchemaNode = Record<string, unknown>;

const isNode = (value: unknown): value is SchemaNode =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function propertiesOf(node: SchemaNode): Record<string, SchemaNode> {
  return isNode(node.properties) ? (node.properties as Record<string, SchemaNode>) : {};
}

/** Each option path of `node` (`server.port`, `tenants[].keys[].sha256`), with its node and parent. */
function optionsOf(node: SchemaNode, prefix = ''): { path: string; node: SchemaNode; required: boolean }[] {
  return Object.entries(propertiesOf(node)).flatMap(([name, child]) => {
    const optionPath = `${prefix}${name}`;
    const required = Array.isArray(node.required) && node.required.includes(name);
    const own = { path: optionPath, node: child, required };
    if (isNode(child.items) && child.items.type === 'object') {
      return [own, ...optionsOf(child.items, `${optionPath}[].`)];
    }
    return [own, ...optionsOf(child, `${optionPath}.`)];
  });
}

const code = (value: unknown): string => `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;

/** The type and range of a plain option, as the schema states them; undefined when it takes words. */
function typeOf(node: SchemaNode): string | undefined {
  if (Array.isArray(node.enum)) return node.enum.map(code).join(', ');
  switch (node.type) {
    case 'boolean':
      return 'boolean';
    case 'string':
      return typeof node.pattern === 'string' ? code(node.pattern.replace(/^\^|\$$/g, '')) : 'string';
    case 'integer':
    case 'number': {
      const { minimum, maximum, exclusiveMinimum } = node;
      if (typeof exclusiveMinimum === 'number' && typeof maximum === 'number')
        return `${node.type}, above ${exclusiveMinimum}, at most ${maximum}`;
      if (typeof minimum === 'number' && typeof maximum === 'number')
        return `${node.type} ${minimum}–${maximum}`;
      if (typeof minimum === 'number') return `${node.type} ≥ ${minimum}`;
      return node.type;
    }
    default:
      return undefined;
  }
}

function defaultOf(node: SchemaNode, required: boolean): string {
  if ('default' in node) return `default ${code(node.default)}`;
  return required ? 'required' : 'default none';
}

/**
 * `text` as list item lines of at most LINE_WIDTH characters, as Prettier keeps them: never broken inside
 * a code span, nor before what Markdown would read as a new block (a list marker, a heading).
 */
function listItem(text: string): string[] {
  const lines: string[] = [];
  let line = '-';
  let inCode = false;
  for (const word of text.split(' ')) {
    const startsBlock = /^([-+*#>]|\d+[.)])$/.test(word);
    if (line.length + 1 + word.length > LINE_WIDTH && line !== '-' && !startsBlock && !inCode) {
      lines.push(line);
      line = `${CONTINUATION}${word}`;
    } else {
      line = `${line} ${word}`;
    }
    if (word.split('`').length % 2 === 0) inCode = !inCode;
  }
  lines.push(line);
  return lines;
}

/** The generated part of the page: every documented option, the tenant's own under their heading. */
export function renderConfigReference(): string {
  const options = new Map(optionsOf(ConfigSchema as unknown as SchemaNode).map((each) => [each.path, each]));
  const item = (optionPath: string, shownAs: string): string[] => {
    const option = options.get(optionPath);
    const docs = CONFIG_OPTION_DOCS[optionPath];
    if (option === undefined || docs === undefined) throw new Error(`${optionPath}: not an option`);
    const type = docs.type ?? typeOf(option.node);
    if (type === undefined) throw new Error(`${optionPath}: its type needs words (CONFIG_OPTION_DOCS type)`);
    const fallback = defaultOf(option.node, option.required);
    const defaultText = docs.default === undefined ? fallback : `default ${docs.default}`;
    const note = docs.defaultNote === undefined ? '' : ` ${docs.defaultNote}`;
    return listItem(`\`${shownAs}\` (${type}; ${defaultText}${note}): ${docs.text}`);
  };
  const paths = Object.keys(CONFIG_OPTION_DOCS);
  return [
    REFERENCE_START,
    '',
    ...paths.filter((each) => !each.startsWith(TENANTS)).flatMap((each) => item(each, each)),
    '',
    '### Tenants',
    '',
    ...paths
      .filter((each) => each.startsWith(TENANTS))
      .flatMap((each) => item(each, each.slice(TENANTS.length))),
    '',
    REFERENCE_END,
  ].join('\n');
}

/**
 * Options of the schema without a description: neither documented themselves, nor inside an option that
 * is (`policy.samples` covers `policy.samples.maximum`), nor a section whose options are (`server`).
 */
export function undocumentedOptions(): string[] {
  const documented = Object.keys(CONFIG_OPTION_DOCS);
  const within = (inner: string, outer: string) =>
    inner.startsWith(`${outer}.`) || inner.startsWith(`${outer}[].`);
  return optionsOf(ConfigSchema as unknown as SchemaNode)
    .map(({ path: optionPath }) => optionPath)
    .filter(
      (optionPath) =>
        !documented.some(
          (each) => each === optionPath || within(optionPath, each) || within(each, optionPath),
        ),
    );
}

/** The page with its generated part as it should be. */
export async function expectedConfigurationPage(): Promise<string> {
  const page = await readFile(path.join(REPOSITORY_ROOT, CONFIGURATION_PAGE), 'utf8');
  const start = page.indexOf(REFERENCE_START);
  const end = page.indexOf(REFERENCE_END);
  if (start < 0 || end < start) throw new Error(`${CONFIGURATION_PAGE} has no generated reference markers`);
  return `${page.slice(0, start)}${renderConfigReference()}${page.slice(end + REFERENCE_END.length)}`;
}

if (import.meta.main) {
  await writeFile(path.join(REPOSITORY_ROOT, CONFIGURATION_PAGE), await expectedConfigurationPage());
}
