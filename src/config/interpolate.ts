// Replaces `${NAME}` in every string value with the environment variable NAME; `$${` stands for a
// literal `${`. Keys are never interpolated. Builds a fresh tree so YAML aliases stay independent.
// Each value that came from the environment is remembered, so that a problem with it names the variable
// (the file's text is not where the mistake is), and so that a value that is one reference alone can
// take the type the schema asks for (`port: ${PORT}` with PORT=8080 is the integer 8080).
import { formatPath, type ConfigProblem, type PathSegment } from './problems.ts';
import { ENV_NAME_PATTERN } from './schema.ts';

const REFERENCE = /\$(\$?)\{([^}]*)\}/g;

/** `text` written so that interpolation reads it back as itself: each reference escaped with a `$`. */
export function escapeReferences(text: string): string {
  return text.replace(REFERENCE, (reference) => `$${reference}`);
}
const WHOLE_REFERENCE = /^\$\{([^}]*)\}$/;
const ENV_NAME = new RegExp(ENV_NAME_PATTERN);

/** A value of the document that came, in whole or in part, from environment variables. */
export interface EnvSource {
  path: PathSegment[];
  variables: string[];
  /** The value is one reference and nothing else, so it may be read as a number or a boolean. */
  whole: boolean;
}

export interface Interpolated {
  document: unknown;
  sources: EnvSource[];
}

export function interpolateEnv(
  value: unknown,
  env: NodeJS.ProcessEnv,
  problems: ConfigProblem[],
): Interpolated {
  const sources: EnvSource[] = [];
  const walk = (node: unknown, path: PathSegment[]): unknown => {
    if (typeof node === 'string') {
      const variables: string[] = [];
      const replaced = node.replace(REFERENCE, (reference, escaped: string, name: string) => {
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
        variables.push(name);
        return replacement;
      });
      if (variables.length > 0) sources.push({ path, variables, whole: WHOLE_REFERENCE.test(node) });
      return replaced;
    }
    if (Array.isArray(node)) return node.map((item: unknown, index) => walk(item, [...path, index]));
    if (typeof node === 'object' && node !== null) {
      return Object.fromEntries(Object.entries(node).map(([key, item]) => [key, walk(item, [...path, key])]));
    }
    return node;
  };
  return { document: walk(value, []), sources };
}
