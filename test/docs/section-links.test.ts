// Docs and code agree on where things are: every relative link in README.md and docs/ names a file that
// exists and, when it has a #fragment, a heading that file has (GitHub's anchors: lower case, punctuation
// dropped, spaces to hyphens, a repeated heading numbered -1, -2...). A renamed section breaks this test,
// not a reader's click. Explicit `<a id>` anchors count too.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const LINK = /\[[^\]]*\]\(([^)\s]+)\)/g;
const FENCE = /^\s*(```|~~~)/;

function markdownFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

/** The lines of a Markdown file outside fenced code blocks (a `#` in a shell block is no heading). */
function proseLines(text: string): string[] {
  let inFence = false;
  return text.split('\n').filter((line) => {
    if (FENCE.test(line)) {
      inFence = !inFence;
      return false;
    }
    return !inFence;
  });
}

function githubAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(path: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(readFileSync(path, 'utf8'))) {
    // An explicit anchor, `<a id="name"></a>`, for a place that is not a heading.
    for (const [, id = ''] of line.matchAll(/<a (?:id|name)="([^"]+)"/g)) anchors.add(id);
    const heading = /^#{1,6}\s+(.*)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const anchor = githubAnchor(heading);
    const count = seen.get(anchor) ?? 0;
    anchors.add(count === 0 ? anchor : `${anchor}-${count}`);
    seen.set(anchor, count + 1);
  }
  return anchors;
}

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
    [join(ROOT, 'README.md'), ...markdownFiles(join(ROOT, 'docs'))].map((path) => relative(ROOT, path)),
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
