// `gengate check-config --config FILE [--skip-credentials] [--strict] [--against RUNNING]`: loads the file
// exactly as the gateway does at start-up, with this process's environment, and lists every problem in
// one pass: shape, references between sections, `${NAME}` variables, and the credentials' values (each
// env variable set and not empty, each file readable and not empty, each webhook secret read as the
// gateway reads it at start). Keys that have expired or expire within 14 days are warnings, as the
// gateway logs them. --skip-credentials leaves out the credentials' values, for a pipeline that checks a
// rendered file away from the secrets mounted where the gateway runs.
// Webhook URLs that every attempt would refuse, and destination list entries that can have no effect,
// are warnings too (src/webhooks/destination-warnings.ts).
// --against names the file the gateway runs now: what a reload onto FILE would refuse is then a problem
// too, and the sections that change only on restart are warnings (the same judgement as the gateway's
// reload, src/config/reload.ts).
import { dirname } from 'node:path';
import type { ParseArgsOptionsConfig } from 'node:util';
import { keyExpiryWarnings } from '../config/key-expiry.ts';
import { ConfigError, loadConfig, type ConfigProblem } from '../config/load.ts';
import { reloadRefusals, sectionsNeedingRestart } from '../config/reload.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { webhookDestinationWarnings } from '../webhooks/destination-warnings.ts';
import { operatorPath, readArguments, reportUsageError, type CommandSpec } from './arguments.ts';
import { EXIT_INVALID, EXIT_OK } from './exit-codes.ts';

const CHECK_CONFIG_COMMAND = {
  name: 'gengate check-config',
  help: `usage: npm run gengate -- check-config --config FILE [--skip-credentials] [--strict] [--against RUNNING]

Validates a configuration as the gateway loads it and lists every problem in one pass.
Exit 0 when it is valid (warnings, if any, on stderr), 2 when it is not.

options:
  -c, --config FILE      the configuration to check
  --skip-credentials     do not check the credentials' values (variables and files)
  --strict               fail (exit 2) on warnings too: keys expired or expiring within 14 days,
                         webhook URLs every attempt would refuse, destination entries with no effect
  --against RUNNING      the configuration the gateway runs now: also list what a reload from it to
                         FILE would refuse, and warn about the sections that change only on restart
                         (relative credential files are then read from RUNNING's folder)
  -h, --help             print this help
  --version              print the version
`,
  options: {
    config: { type: 'string', short: 'c' },
    'skip-credentials': { type: 'boolean' },
    strict: { type: 'boolean' },
    against: { type: 'string' },
  },
} as const satisfies CommandSpec<ParseArgsOptionsConfig>;

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;
const lines = (problems: readonly ConfigProblem[], prefix = '') =>
  problems.map((problem) => `${prefix}${problem.path}: ${problem.message}\n`).join('');

interface Judgement {
  problems: ConfigProblem[];
  warnings: ConfigProblem[];
  config?: GatewayConfig;
}

async function judge(
  path: string,
  options: { credentials: boolean; against: string | undefined },
): Promise<Judgement> {
  let running: GatewayConfig | undefined;
  if (options.against !== undefined) {
    try {
      // The running file was accepted already; only its sections and credential names matter here.
      running = await loadConfig(options.against, process.env, 'none');
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      const problems = error.problems.map((problem) => ({
        ...problem,
        message: `${problem.message} (in the running configuration ${options.against})`,
      }));
      return { problems, warnings: [] };
    }
  }
  let config: GatewayConfig;
  try {
    config = await loadConfig(
      path,
      process.env,
      options.credentials ? 'all' : 'none',
      options.against === undefined ? undefined : dirname(options.against),
    );
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return { problems: [...error.problems], warnings: [...error.warnings] };
  }
  const warnings = [...keyExpiryWarnings(config.tenants, Date.now()), ...webhookDestinationWarnings(config)];
  if (running === undefined) return { problems: [], warnings, config };
  const held = new Set(Object.keys(running.upstream.credentials));
  const restartOnly = sectionsNeedingRestart(running, config).map((section) => ({
    path: section,
    message: 'changed: applies only on restart, a reload keeps the running value',
  }));
  return { problems: reloadRefusals(config, held), warnings: [...warnings, ...restartOnly], config };
}

export async function checkConfigCommand(argv: string[]): Promise<number> {
  const args = readArguments(CHECK_CONFIG_COMMAND, argv);
  if (typeof args === 'number') return args;
  if (args.config === undefined) {
    return reportUsageError(CHECK_CONFIG_COMMAND.name, 'missing --config FILE');
  }
  const path = operatorPath(args.config, process.env);
  const { problems, warnings, config } = await judge(path, {
    credentials: args['skip-credentials'] !== true,
    against: args.against === undefined ? undefined : operatorPath(args.against, process.env),
  });
  if (problems.length > 0) {
    process.stderr.write(`${path}: invalid configuration\n${lines(problems)}${lines(warnings, 'warning: ')}`);
    return EXIT_INVALID;
  }
  if (args.strict === true && warnings.length > 0) {
    process.stderr.write(
      `${path}: ${plural(warnings.length, 'warning')}, refused by --strict\n${lines(warnings, 'warning: ')}`,
    );
    return EXIT_INVALID;
  }
  const count = config?.tenants.length ?? 0;
  const warned = warnings.length === 0 ? '' : `, ${plural(warnings.length, 'warning')}`;
  process.stdout.write(`config OK: ${plural(count, 'tenant')}${warned}\n`);
  process.stderr.write(lines(warnings, 'warning: '));
  return EXIT_OK;
}
