// `gengate check-config --config FILE [--skip-credentials]`: loads the file exactly as the gateway does at
// start-up, with this process's environment, and lists every problem in one pass: shape, references
// between sections, `${NAME}` variables, and the credentials' values (each env variable set and not
// empty, each file readable and not empty). --skip-credentials leaves out the credentials' values, for a
// pipeline that checks a rendered file away from the secrets mounted where the gateway runs.
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config/load.ts';
import { EXIT_INVALID, EXIT_OK } from './exit-codes.ts';

const USAGE = 'usage: npm run gengate -- check-config --config FILE [--skip-credentials]\n';

export async function checkConfigCommand(argv: string[]): Promise<number> {
  let options: { config?: string; 'skip-credentials'?: boolean };
  try {
    options = parseArgs({
      args: argv,
      options: { config: { type: 'string' }, 'skip-credentials': { type: 'boolean' } },
      strict: true,
    }).values;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}`);
    return EXIT_INVALID;
  }
  const configPath = options.config;
  if (configPath === undefined) {
    process.stderr.write(`missing --config\n${USAGE}`);
    return EXIT_INVALID;
  }
  try {
    const config = await loadConfig(
      configPath,
      process.env,
      options['skip-credentials'] === true ? 'none' : 'all',
    );
    const count = config.tenants.length;
    process.stdout.write(`config OK: ${count} tenant${count === 1 ? '' : 's'}\n`);
    return EXIT_OK;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const lines = error.problems.map((problem) => `${problem.path}: ${problem.message}\n`);
    process.stderr.write(`${configPath}: invalid configuration\n${lines.join('')}`);
    return EXIT_INVALID;
  }
}
