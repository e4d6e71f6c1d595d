// The gateway's own command line (`npm start -- [options]`, `node dist/main.js [options]`). Which file
// configures it: --config, else GENGATE_CONFIG, else, with --demo (what `npm start` passes), the demo's
// config/demo.yaml. Without any of them it refuses to start: a gateway run from the repository by
// mistake must not serve the demo's public keys (docs/decisions/0041-demo-chosen-by-the-npm-script.md).
import { fileURLToPath } from 'node:url';
import type { ParseArgsOptionsConfig } from 'node:util';
import { operatorPath, readArguments, reportUsageError, type CommandSpec } from './arguments.ts';

const DEMO_CONFIG = fileURLToPath(new URL('../../config/demo.yaml', import.meta.url));

const START_COMMAND = {
  name: 'gengate',
  help: `usage: npm start -- [--config FILE]       (npm start alone runs the demo)
       node dist/main.js --config FILE

Runs the gateway, its admin server and, when the configuration enables it, the upstream simulator.

options:
  -c, --config FILE   the configuration file (default: $GENGATE_CONFIG)
  --demo              without --config or GENGATE_CONFIG, run the demo (config/demo.yaml)
  -h, --help          print this help
  --version           print the version

environment:
  GENGATE_CONFIG      the configuration file, when --config is not given
  LOG_LEVEL           overrides logging.level
  REDIS_URL           overrides store.redis.url

Other commands (check-config, new-key, simulator): npm run gengate -- --help
`,
  options: {
    config: { type: 'string', short: 'c' },
    demo: { type: 'boolean' },
  },
} as const satisfies CommandSpec<ParseArgsOptionsConfig>;

export interface StartOptions {
  /** The configuration file, absolute. */
  configPath: string;
  /** Where the path came from, for the start-up line and for errors: `--config`, `GENGATE_CONFIG`, `--demo`. */
  configFrom: string;
}

/** The gateway's options, or the exit code once help, the version or a mistake has been written. */
export function readStartOptions(argv: readonly string[], env: NodeJS.ProcessEnv): StartOptions | number {
  const values = readArguments(START_COMMAND, argv);
  if (typeof values === 'number') return values;
  if (values.config !== undefined) {
    return { configPath: operatorPath(values.config, env), configFrom: '--config' };
  }
  const fromEnv = env.GENGATE_CONFIG;
  if (fromEnv !== undefined && fromEnv !== '') {
    return { configPath: operatorPath(fromEnv, env), configFrom: 'GENGATE_CONFIG' };
  }
  if (values.demo === true) return { configPath: DEMO_CONFIG, configFrom: '--demo' };
  return reportUsageError(
    START_COMMAND.name,
    'no configuration file: pass --config FILE (npm start -- --config FILE) or set GENGATE_CONFIG; `npm start` alone runs the demo',
  );
}
