// What a model glob in `policy.models.allow` / `deny` may look like. Model ids are
// `<vendor>@<model_name>`; `*` is the only wildcard and matches any run of characters, `@` included.

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
