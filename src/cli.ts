// The `gengate` command line: `npm run gengate -- <command> [options]`.
// Each command lives in src/cli/ and returns the process exit code; only this file exits.
import { checkConfigCommand } from './cli/check-config.ts';
import { newKeyCommand } from './cli/new-key.ts';
import { simulatorCommand } from './cli/simulator.ts';

type Command = (argv: string[]) => Promise<number>;

const COMMANDS: Record<string, { run: Command; summary: string }> = {
  'check-config': {
    run: checkConfigCommand,
    summary: 'validate a configuration file (exit 0 valid, 2 invalid)',
  },
  'new-key': { run: newKeyCommand, summary: 'print a fresh tenant key and the config entry to paste' },
  simulator: { run: simulatorCommand, summary: 'run the upstream simulator alone' },
};

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, { summary }]) => `  ${name.padEnd(14)} ${summary}`);
  return ['usage: npm run gengate -- <command> [options]', '', 'commands:', ...lines, ''].join('\n');
}

const [name, ...rest] = process.argv.slice(2);
const command = name === undefined ? undefined : COMMANDS[name];
if (command === undefined) {
  process.stderr.write(usage());
  process.exitCode = name === undefined || name === '--help' ? 0 : 2;
} else {
  process.exitCode = await command.run(rest);
}
