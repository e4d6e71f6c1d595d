// `gengate check-config --config FILE`: loads the file exactly as the gateway would, with this process's
// environment, and lists every problem. Credential files are not read: they are usually mounted only
// where the gateway runs, and the gateway checks them at start.
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config/load.ts';
import { EXIT_INVALID, EXIT_OK } from './exit-codes.ts';

const USAGE = 'usage: npm run gengate -- check-config --config FILE\n';

export async function checkConfigCommand(argv: string[]): Promise<number> {
  let configPath: string | undefined;
  try {
    configPath = parseArgs({ args: argv, options: { config: { type: 'string' } }, strict: true }).values
      .config;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}`);
    return EXIT_INVALID;
  }
  if (configPath === undefined) {
    process.stderr.write(`missing --config\n${USAGE}`);
    return EXIT_INVALID;
  }
  try {
    const config = await loadConfig(configPath, process.env);
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
