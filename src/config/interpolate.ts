// Replaces `${NAME}` in every string value with the environment variable NAME; `$${` stands for a
// literal `${`. Keys are never interpolated. Builds a fresh tree so YAML aliases stay independent.
import { formatPath, type ConfigProblem, type PathSegment } from './problems.ts';
import { ENV_NAME_PATTERN } from './schema.ts';

const REFERENCE = /\$(\$?)\{([^}]*)\}/g;
const ENV_NAME = new RegExp(ENV_NAME_PATTERN);

export function interpolateEnv(value: unknown, env: NodeJS.ProcessEnv, problems: ConfigProblem[]): unknown {
  const walk = (node: unknown, path: PathSegment[]): unknown => {
    if (typeof node === 'string') {
      return node.replace(REFERENCE, (reference, escaped: string, name: string) => {
        if (escaped !== '') return reference.slice(1);
        if (!ENV_NAME.test(name)) {
          problems.push({
            path: formatPath(path),
            message: `"${reference}" is not a valid variable reference`,
          });
          return reference;
        }
        const replacement = env[name];
        if (replacement === undefined) {
          problems.push({ path: formatPath(path), message: `environment variable ${name} is not set` });
          return reference;
        }
        return replacement;
      });
    }
    if (Array.isArray(node)) return node.map((item: unknown, index) => walk(item, [...path, index]));
    if (typeof node === 'object' && node !== null) {
      return Object.fromEntries(Object.entries(node).map(([key, item]) => [key, walk(item, [...path, key])]));
    }
    return node;
  };
  return walk(value, []);
}
