// `gengate new-key --tenant ID [--label TEXT] [--expires-at DATE-TIME]`: prints a fresh tenant key once,
// and the entry (hash and prefix, never the key) to paste under that tenant's `keys`.
import type { ParseArgsOptionsConfig } from 'node:util';
import { generateTenantKey } from '../auth/keys.ts';
import { isRfc3339DateTime, toIsoDateTime } from '../config/date-time.ts';
import { escapeReferences } from '../config/interpolate.ts';
import { KEY_EXPIRY_WARNING_DAYS, keyExpiryWarnings } from '../config/key-expiry.ts';
import { TENANT_ID_DESCRIPTION, TENANT_ID_PATTERN } from '../config/schema.ts';
import { readArguments, reportUsageError, type CommandSpec } from './arguments.ts';
import { EXIT_OK } from './exit-codes.ts';

const TENANT_ID = new RegExp(TENANT_ID_PATTERN);

const NEW_KEY_COMMAND = {
  name: 'gengate new-key',
  help: `usage: npm run gengate -- new-key --tenant ID [--label TEXT] [--expires-at 2027-06-30T00:00:00Z]

Prints a fresh tenant key once, and the entry (hash and prefix, never the key) to paste under that
tenant's keys. An expiry in the past is refused; one within ${KEY_EXPIRY_WARNING_DAYS} days is warned about.

options:
  --tenant ID             the tenant the key is for
  --label TEXT            a name for the key, shown by GET /v1/account/keys
  --expires-at DATE-TIME  when the key stops working (RFC 3339)
  -h, --help              print this help
  --version               print the version
`,
  options: { tenant: { type: 'string' }, label: { type: 'string' }, 'expires-at': { type: 'string' } },
} as const satisfies CommandSpec<ParseArgsOptionsConfig>;

interface NewKeyArgs {
  tenant: string;
  label?: string;
  expiresAt?: string;
}

/** The checked arguments, a usage mistake's message, or the exit code of --help and --version. */
function parseNewKeyArgs(argv: string[]): NewKeyArgs | string | number {
  const values = readArguments(NEW_KEY_COMMAND, argv);
  if (typeof values === 'number') return values;
  const { tenant, label, 'expires-at': expiresAt } = values;
  if (tenant === undefined) return 'missing --tenant ID';
  if (!TENANT_ID.test(tenant)) {
    return `invalid tenant id "${tenant}": must be ${TENANT_ID_DESCRIPTION}`;
  }
  if (expiresAt !== undefined && !isRfc3339DateTime(expiresAt)) {
    return `invalid --expires-at "${expiresAt}": use an RFC 3339 date and time such as 2027-06-30T00:00:00Z`;
  }
  const expiresAtIso = expiresAt === undefined ? undefined : toIsoDateTime(expiresAt);
  // A key born expired could never authenticate: surely a typo in the year.
  if (expiresAtIso !== undefined && Date.parse(expiresAtIso) <= Date.now()) {
    return `--expires-at ${expiresAtIso} is in the past: the key could never be used`;
  }
  return {
    tenant,
    ...(label === undefined ? {} : { label }),
    ...(expiresAtIso === undefined ? {} : { expiresAt: expiresAtIso }),
  };
}

export function newKeyCommand(argv: string[]): Promise<number> {
  const args = parseNewKeyArgs(argv);
  if (typeof args === 'number') return Promise.resolve(args);
  if (typeof args === 'string') return Promise.resolve(reportUsageError(NEW_KEY_COMMAND.name, args));
  const { key, sha256, prefix } = generateTenantKey();
  const [soon] = keyExpiryWarnings(
    [
      {
        id: args.tenant,
        keys: [{ prefix, ...(args.expiresAt === undefined ? {} : { expiresAt: args.expiresAt }) }],
      },
    ],
    Date.now(),
  );
  if (soon !== undefined) process.stderr.write(`warning: ${soon.message}\n`);
  // JSON strings are valid YAML double-quoted scalars, so any label is pasted safely; what interpolation
  // would read as a variable is escaped, so the label loads as given.
  const members = [
    `sha256: "${sha256}"`,
    `prefix: "${prefix}"`,
    ...(args.label === undefined ? [] : [`label: ${escapeReferences(JSON.stringify(args.label))}`]),
    ...(args.expiresAt === undefined ? [] : [`expiresAt: "${args.expiresAt}"`]),
  ];
  process.stdout.write(
    [
      `New key for tenant "${args.tenant}". It is shown only this once; gengate keeps only its hash:`,
      '',
      `  ${key}`,
      '',
      `Add this entry to the keys of tenant "${args.tenant}" in the configuration:`,
      '',
      `      - { ${members.join(', ')} }`,
      '',
    ].join('\n'),
  );
  return Promise.resolve(EXIT_OK);
}
