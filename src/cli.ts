// The `gengate` command line: `npm run gengate -- <command> [options]`.
// Each command lives in src/cli/ and returns the process exit code; only this file exits.
import { gengateVersion, reportUsageError } from './cli/arguments.ts';
import { checkConfigCommand } from './cli/check-config.ts';
import { EXIT_OK } from './cli/exit-codes.ts';
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
  return [
    'usage: npm run gengate -- <command> [options]',
    '',
    'commands:',
    ...lines,
    '',
    'Every command answers --help and --version. The gateway itself: npm start -- --help',
    '',
  ].join('\n');
}

async function runCommandLine([name, ...rest]: string[]): Promise<number> {
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return EXIT_OK;
  }
  if (name === '--version') {
    process.stdout.write(`gengate ${gengateVersion()}\n`);
    return EXIT_OK;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (command === undefined) {
    const known = Object.keys(COMMANDS).join(', ');
    return reportUsageError('gengate', `unknown command "${name}" (commands: ${known})`);
  }
  return command.run(rest);
}

process.exitCode = await runCommandLine(process.argv.slice(2));
