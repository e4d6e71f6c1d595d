// Model globs, in `policy.models.allow` / `deny`: what one may look like (checked
// with the configuration) and what it matches. Model ids are `<vendor>@<model_name>`; `*` is the only
// wildcard and matches any run of characters, `@` included; a glob without `*` is a whole id. Globs are
// split once per configuration (the frozen lists key a cache), not per request.

const NOT_WILDCARDS = /[?[\]{}!\\]/;
const WHITESPACE_OR_CONTROL = /[\s\p{Cc}]/u;
const VENDOR_AT_MODEL = /^[^@]+@[^@]+$/;

/** Why `glob` is not a well-formed model glob, or undefined when it is. */
export function modelGlobProblem(glob: string): string | undefined {
  if (glob === '') return 'must not be empty';
  if (WHITESPACE_OR_CONTROL.test(glob)) return 'must not contain spaces or control characters';
  if (NOT_WILDCARDS.test(glob)) return 'only * is a wildcard; ? [ ] { } ! and \\ are not allowed';
  if (glob.split('@').length > 2) return 'must contain "@" at most once';
  if (!glob.includes('*') && !VENDOR_AT_MODEL.test(glob)) {
    return 'must be a model id <vendor>@<model_name> or contain the wildcard *';
  }
  return undefined;
}

type ModelMatcher = (modelId: string) => boolean;

function compileModelGlob(glob: string): ModelMatcher {
  const [first = '', ...rest] = glob.split('*');
  const last = rest.pop();
  if (last === undefined) return (modelId) => modelId === glob;
  const middle = rest.filter((part) => part !== '');
  return (modelId) => {
    if (modelId.length < first.length + last.length) return false;
    if (!modelId.startsWith(first) || !modelId.endsWith(last)) return false;
    // Each middle part must appear, in order, between the prefix and the suffix; the leftmost match
    // leaves the most room for the parts after it.
    let position = first.length;
    const end = modelId.length - last.length;
    for (const part of middle) {
      const found = modelId.indexOf(part, position);
      if (found === -1 || found + part.length > end) return false;
      position = found + part.length;
    }
    return true;
  };
}

const compiledLists = new WeakMap<readonly string[], readonly { glob: string; matches: ModelMatcher }[]>();

function compiledList(globs: readonly string[]) {
  let compiled = compiledLists.get(globs);
  if (compiled === undefined) {
    compiled = globs.map((glob) => ({ glob, matches: compileModelGlob(glob) }));
    compiledLists.set(globs, compiled);
  }
  return compiled;
}

/** The first glob of `globs` that `modelId` matches, or undefined. */
export function firstMatchingGlob(globs: readonly string[], modelId: string): string | undefined {
  return compiledList(globs).find(({ matches }) => matches(modelId))?.glob;
}
