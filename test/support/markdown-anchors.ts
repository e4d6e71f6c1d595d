// The sections a Markdown file can be linked to, as GitHub names them: lower case, punctuation dropped,
// spaces to hyphens, a repeated heading numbered -1, -2...; explicit `<a id>` anchors count too. Headings
// inside fenced code blocks (a `#` in a shell block) are not sections.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const FENCE = /^\s*(```|~~~)/;

/** The files under `folder` whose names end with one of `endings`, node_modules left out. */
export function filesUnder(folder: string, endings: readonly string[]): string[] {
  return readdirSync(folder).flatMap((name) => {
    if (name === 'node_modules') return [];
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return filesUnder(path, endings);
    return endings.some((ending) => name.endsWith(ending)) ? [path] : [];
  });
}

/** The lines of a Markdown file outside fenced code blocks. */
export function proseLines(text: string): string[] {
  let inFence = false;
  return text.split('\n').filter((line) => {
    if (FENCE.test(line)) {
      inFence = !inFence;
      return false;
    }
    return !inFence;
  });
}

export function githubAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

export function anchorsOf(path: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(readFileSync(path, 'utf8'))) {
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
