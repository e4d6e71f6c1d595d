// Docs and code agree on where things are: every relative link in README.md and docs/ names a file that
// exists and, when it has a #fragment, a heading that file has (GitHub's anchors, test/support/
// markdown-anchors.ts). A renamed section breaks this test, not a reader's click.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { anchorsOf, filesUnder, githubAnchor, proseLines } from '../support/markdown-anchors.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const LINK = /\[[^\]]*\]\(([^)\s]+)\)/g;

function brokenLinks(path: string): string[] {
  const broken: string[] = [];
  for (const line of proseLines(readFileSync(path, 'utf8'))) {
    for (const [, target = ''] of line.matchAll(LINK)) {
      if (/^[a-z]+:/i.test(target)) continue;
      const [file = '', fragment] = target.split('#');
      const linked = file === '' ? path : resolve(dirname(path), decodeURI(file));
      if (!existsSync(linked)) {
        broken.push(`${target}: no such file`);
        continue;
      }
      if (fragment !== undefined && linked.endsWith('.md') && !anchorsOf(linked).has(fragment)) {
        broken.push(`${target}: no such section in ${relative(ROOT, linked)}`);
      }
    }
  }
  return broken;
}

describe('section links in README.md and docs/ resolve', () => {
  test.each(
    [join(ROOT, 'README.md'), ...filesUnder(join(ROOT, 'docs'), ['.md'])].map((path) => relative(ROOT, path)),
  )('%s', (file) => {
    expect(brokenLinks(join(ROOT, file))).toEqual([]);
  });

  test('the anchors are GitHub’s', () => {
    expect(githubAnchor('Clients get 401')).toBe('clients-get-401');
    expect(githubAnchor('`gengate_config_info` and reloads: why?')).toBe(
      'gengate_config_info-and-reloads-why',
    );
  });
});
