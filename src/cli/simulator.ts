// `npm run gengate -- simulator`: the upstream simulator alone, until SIGINT or SIGTERM.
import { once } from 'node:events';
import type { ParseArgsOptionsConfig } from 'node:util';
import { DEFAULT_PROCESSING_MS, DEFAULT_QUEUED_MS, DEFAULT_REQUESTS_PER_MINUTE } from '../simulator/app.ts';
import { startSimulator, type SimulatorServer } from '../simulator/server.ts';
import { readArguments, reportUsageError, type CommandSpec } from './arguments.ts';
import { EXIT_CANNOT_LISTEN, EXIT_OK } from './exit-codes.ts';
import { cannotListenMessage, unresolvableHostReason } from './listen-failure.ts';
import type { SimulatedToken } from '../simulator/accounts.ts';

const DEFAULT_PORT = 8090;
const DEFAULT_HOST = '127.0.0.1';
const MAX_PORT = 65_535;
// The demo's fake upstream tokens; config/demo-secrets/ holds the same values.
const DEMO_TOKENS: SimulatedToken[] = [
  { name: 'shared', token: 'sim_shared_3c1f9a0e7b5d4c2a' },
  { name: 'research', token: 'sim_research_8e2d6b4f1a9c7e5d' },
];

const SIMULATOR_COMMAND = {
  name: 'gengate simulator',
  help: `usage: npm run gengate -- simulator [options]

Runs the upstream simulator alone, until SIGINT or SIGTERM.

options:
  --port N             port to listen on (default ${DEFAULT_PORT}; 0 picks a free one)
  --host HOST          address to listen on (default ${DEFAULT_HOST})
  --token NAME=TOKEN   an upstream account and its token; repeatable (default: the two demo tokens)
  --queued-ms N        time a job stays queued (default ${DEFAULT_QUEUED_MS})
  --processing-ms N    time a job stays processing (default ${DEFAULT_PROCESSING_MS})
  --rpm N              requests per minute per account (default ${DEFAULT_REQUESTS_PER_MINUTE})
  -h, --help           print this help
  --version            print the version
`,
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    token: { type: 'string', multiple: true },
    'queued-ms': { type: 'string' },
    'processing-ms': { type: 'string' },
    rpm: { type: 'string' },
  },
} as const satisfies CommandSpec<ParseArgsOptionsConfig>;

/** A mistake in an option's value, told in one line. */
class UsageError extends Error {}

function nonNegativeInteger(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text)) throw new UsageError(`--${name} must be a non-negative integer`);
  return Number(text);
}

// node:net throws a RangeError past the last port; 0 stays, it asks for a free one.
function portNumber(text: string | undefined): number {
  const port = nonNegativeInteger('port', text) ?? DEFAULT_PORT;
  if (port > MAX_PORT) throw new UsageError(`--port must be at most ${MAX_PORT}`);
  return port;
}

function parseToken(text: string): SimulatedToken {
  const separator = text.indexOf('=');
  if (separator <= 0 || separator === text.length - 1)
    throw new UsageError('--token must look like NAME=TOKEN');
  return { name: text.slice(0, separator), token: text.slice(separator + 1) };
}

/** The simulator's options, or the exit code once help, the version or a mistake has been written. */
function parseOptions(argv: string[]) {
  const values = readArguments(SIMULATOR_COMMAND, argv);
  if (typeof values === 'number') return values;
  try {
    const requestsPerMinute = nonNegativeInteger('rpm', values.rpm);
    if (requestsPerMinute === 0) throw new UsageError('--rpm must be at least 1');
    return {
      host: values.host ?? DEFAULT_HOST,
      port: portNumber(values.port),
      tokens: values.token === undefined ? DEMO_TOKENS : values.token.map(parseToken),
      queuedMs: nonNegativeInteger('queued-ms', values['queued-ms']),
      processingMs: nonNegativeInteger('processing-ms', values['processing-ms']),
      requestsPerMinute,
    };
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return reportUsageError(SIMULATOR_COMMAND.name, error.message);
  }
}

export async function simulatorCommand(argv: string[]): Promise<number> {
  const options = parseOptions(argv);
  if (typeof options === 'number') return options;
  let simulator: SimulatorServer;
  try {
    simulator = await startSimulator(options);
  } catch (error) {
    // A host that names nothing is a mistake on the command line, not a busy address.
    const hostReason = unresolvableHostReason(error);
    if (hostReason !== undefined) {
      return reportUsageError(SIMULATOR_COMMAND.name, `--host ${options.host}: ${hostReason}`);
    }
    const message = cannotListenMessage(error, options, '--port');
    if (message === undefined) throw error;
    process.stderr.write(`gengate simulator: ${message}\n`);
    return EXIT_CANNOT_LISTEN;
  }
  const accounts = options.tokens.map((entry) => entry.name).join(', ');
  process.stdout.write(`gengate simulator listening on ${simulator.url} (accounts: ${accounts})\n`);
  await Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')]);
  await simulator.close();
  return EXIT_OK;
}
