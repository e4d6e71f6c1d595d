// How configuration problems are reported: every problem at once, each with the path of the value
// concerned in dotted form (`tenants[0].policy.samples.maximum`), as check-config and main print them.

export interface ConfigProblem {
  path: string;
  message: string;
}

export type PathSegment = string | number;

const ROOT_PATH = '(root)';
const PLAIN_KEY = /^[A-Za-z0-9_-]+$/;

export function formatPath(segments: readonly PathSegment[]): string {
  let path = '';
  for (const segment of segments) {
    if (typeof segment === 'number') path += `[${segment}]`;
    else if (PLAIN_KEY.test(segment)) path += path === '' ? segment : `.${segment}`;
    else path += `[${JSON.stringify(segment)}]`;
  }
  return path === '' ? ROOT_PATH : path;
}

export class ConfigError extends Error {
  readonly problems: readonly ConfigProblem[];
  /** What is worth saying beside the problems (keys expired or expiring soon), for check-config. */
  readonly warnings: readonly ConfigProblem[];

  constructor(problems: readonly ConfigProblem[], warnings: readonly ConfigProblem[] = []) {
    const first = problems[0];
    const summary = first === undefined ? 'invalid configuration' : `${first.path}: ${first.message}`;
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
    super(`invalid configuration: ${summary}${more}`);
    this.name = 'ConfigError';
    this.problems = problems;
    this.warnings = warnings;
  }
}
