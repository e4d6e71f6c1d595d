// What a maintainer is pointed to resolves inside the repository. Code, tests, scripts and docs cite the
// docs/ page (and section) that states what they rely on: never an outside document ("contract section
// N") or a tracker's "issue N", and never a benchmark's results file, which stays on the machine that ran
// it (bench/results/ is git-ignored). A decision record that quotes a run gives, in the same paragraph or
// list item, the command that produced its figures. Every docs/ page and section cited from code exists
// (test/support/markdown-anchors.ts names sections as GitHub does).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { anchorsOf, filesUnder, proseLines } from '../support/markdown-anchors.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CODE_FOLDERS = ['src', 'test', 'scripts', 'bench'];
const CODE_ENDINGS = ['.ts', '.sh', '.lua', '.mjs', '.js'];
const THIS_FILE = relative(ROOT, fileURLToPath(import.meta.url));

const OUTSIDE_CITATIONS: readonly { what: string; pattern: RegExp }[] = [
  { what: 'an outside contract', pattern: /\bcontract\s*\(?(?:sections?\s+\d|§)/gi },
  { what: 'a tracker issue', pattern: /\bissues?\s+(?:\d|")/gi },
  { what: 'a results file not in the repository', pattern: /bench\/results\/(?!<)/g },
];
const RUN_ID = /\b\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\b|…T\d{2}-\d{2}-\d{2}/;
const COMMAND = /`npm run bench\b/;
const DOCS_CITATION = /\bdocs\/([\w/.-]+\.md)(?:#([\w-]+))?/g;

const codeFiles = CODE_FOLDERS.flatMap((folder) => filesUnder(join(ROOT, folder), CODE_ENDINGS));
const docFiles = [join(ROOT, 'README.md'), ...filesUnder(join(ROOT, 'docs'), ['.md'])];
const cited = [...codeFiles, ...docFiles]
  .map((path) => relative(ROOT, path))
  .filter((file) => file !== THIS_FILE);

// A citation may be wrapped across lines ("(Contract\nsection 5.)"), so the whole text is searched and
// each match reported at the line where it begins.
function outsideCitations(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return OUTSIDE_CITATIONS.flatMap(({ what, pattern }) =>
    [...text.matchAll(pattern)].map((match) => {
      const line = text.slice(0, match.index).split('\n').length;
      return `${file}:${line} cites ${what}: ${match[0]}`;
    }),
  );
}

/** A record's paragraphs and list items, each as one string. */
function blocksOf(text: string): string[] {
  const blocks: string[] = [];
  let current: string[] = [];
  const end = () => {
    if (current.length > 0) blocks.push(current.join(' '));
    current = [];
  };
  for (const line of proseLines(text)) {
    if (line.trim() === '' || /^[-*]\s/.test(line)) end();
    if (line.trim() !== '') current.push(line.trim());
  }
  end();
  return blocks;
}

function brokenDocsCitations(file: string): string[] {
  const broken: string[] = [];
  for (const [, page = '', section] of readFileSync(join(ROOT, file), 'utf8').matchAll(DOCS_CITATION)) {
    const path = join(ROOT, 'docs', page);
    if (!existsSync(path)) broken.push(`${file}: docs/${page}: no such page`);
    else if (section !== undefined && !anchorsOf(path).has(section)) {
      broken.push(`${file}: docs/${page}#${section}: no such section`);
    }
  }
  return broken;
}

describe('citations resolve inside the repository', () => {
  test('no outside contract, tracker issue or results file is cited', () => {
    expect(cited.flatMap(outsideCitations)).toEqual([]);
  });

  test('a decision record that quotes a run gives the command beside it', () => {
    const records = filesUnder(join(ROOT, 'docs/decisions'), ['.md']);
    const withoutCommand = records.flatMap((path) =>
      blocksOf(readFileSync(path, 'utf8'))
        .filter((block) => RUN_ID.test(block) && !COMMAND.test(block))
        .map((block) => `${relative(ROOT, path)}: ${block.slice(0, 160)}`),
    );
    expect(withoutCommand).toEqual([]);
  });

  test('every docs/ page and section cited from code exists', () => {
    expect(codeFiles.map((path) => relative(ROOT, path)).flatMap(brokenDocsCitations)).toEqual([]);
  });

  test('the patterns find what they are for', () => {
    const found = (text: string) =>
      OUTSIDE_CITATIONS.filter(({ pattern }) => text.match(pattern) !== null).length;
    expect(found('(contract section 8)')).toBe(1);
    expect(found('The contract (section 10) lists them')).toBe(1);
    expect(found('what it relies on. (Contract\nsection 5.)')).toBe(1);
    expect(found('Contract sections 7 and 8')).toBe(1);
    expect(found('the targets (issue 7)')).toBe(1);
    expect(found('see bench/results/2026-11-23T07-50-58.json')).toBe(1);
    expect(found('each run writes bench/results/<run id>.json')).toBe(0);
    expect(found('see docs/rate-limits.md#store-failures')).toBe(0);
  });
});
