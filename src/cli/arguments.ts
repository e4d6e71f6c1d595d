// The command line's one way of reading arguments, shared by the gateway (src/main.ts) and every command
// of src/cli.ts: `--help` prints the command's usage to stdout (exit 0), `--version` prints the version
// (exit 0), and a mistake (an unknown option, an option without its value, a stray argument) is told in
// one line naming it, with exit code 2, never a stack trace (docs/operations.md).
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { EXIT_INVALID, EXIT_OK } from './exit-codes.ts';

export interface CommandSpec<O extends ParseArgsOptionsConfig> {
  /** How the line names the command: `gengate`, `gengate check-config`. */
  name: string;
  /** The whole help text, ending with a newline. */
  help: string;
  options: O;
}

const STANDARD_OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const satisfies ParseArgsOptionsConfig;

type Values<O extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<{ options: O; strict: true }>
>['values'];

// package.json sits one folder above both src/ and dist/, and the image keeps it (Dockerfile).
const PACKAGE_JSON = new URL('../../package.json', import.meta.url);

export function gengateVersion(): string {
  return (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version;
}

// node:util's messages are long and suggest `--` tricks; the operator needs the option's name only.
function plainMessage(error: NodeJS.ErrnoException, options: ParseArgsOptionsConfig): string {
  // "Option '-c, --config <value>' argument missing": the long name, when the option has one.
  const named = /'(?:-\w, )?(-[^' ]+)/.exec(error.message)?.[1] ?? '';
  switch (error.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${named}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const name = named.replace(/^-+/, '');
      const option = options[name] ?? Object.values(options).find((o) => o.short === name);
      return option?.type === 'boolean' ? `option ${named} takes no value` : `option ${named} needs a value`;
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${/'([^']*)'/.exec(error.message)?.[1] ?? ''}`.trimEnd();
    default:
      return error.message;
  }
}

/** Writes the one line of a usage mistake and returns its exit code. */
export function reportUsageError(name: string, message: string): number {
  process.stderr.write(`${name}: ${message} (see ${name} --help)\n`);
  return EXIT_INVALID;
}

/**
 * The command's option values; or, when it was asked for help or the version, or the arguments are
 * wrong, the exit code after the answer has been written.
 */
export function readArguments<O extends ParseArgsOptionsConfig>(
  spec: CommandSpec<O>,
  argv: readonly string[],
): Values<O> | number {
  const options = { ...spec.options, ...STANDARD_OPTIONS };
  let values: Record<string, unknown>;
  try {
    ({ values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }));
  } catch (error) {
    return reportUsageError(spec.name, plainMessage(error as NodeJS.ErrnoException, options));
  }
  if (values.help === true) {
    process.stdout.write(spec.help);
    return EXIT_OK;
  }
  if (values.version === true) {
    process.stdout.write(`gengate ${gengateVersion()}\n`);
    return EXIT_OK;
  }
  // `--config=` names nothing; node:util itself refuses `--config` alone and `--config --strict`.
  for (const [key, value] of Object.entries(values)) {
    if (value === '') return reportUsageError(spec.name, `option --${key} needs a value`);
  }
  return values as Values<O>;
}

/**
 * A path as the operator typed it, made absolute against the folder they typed it in: npm runs scripts
 * from the package's root and says where it was started in INIT_CWD.
 */
export function operatorPath(path: string, env: NodeJS.ProcessEnv): string {
  if (isAbsolute(path)) return path;
  const typedIn = env.npm_lifecycle_event !== undefined ? env.INIT_CWD : undefined;
  return resolve(typedIn ?? process.cwd(), path);
}
