// `gengate new-key --tenant ID [--label TEXT] [--expires-at DATE-TIME]`: prints a fresh tenant key once,
// and the entry (hash and prefix, never the key) to paste under that tenant's `keys`.
import { parseArgs } from 'node:util';
import { generateTenantKey } from '../auth/keys.ts';
import { isRfc3339DateTime, toIsoDateTime } from '../config/date-time.ts';
import { TENANT_ID_DESCRIPTION, TENANT_ID_PATTERN } from '../config/schema.ts';
import { EXIT_INVALID, EXIT_OK } from './exit-codes.ts';

const USAGE =
  'usage: npm run gengate -- new-key --tenant ID [--label TEXT] [--expires-at 2027-06-30T00:00:00Z]\n';
const TENANT_ID = new RegExp(TENANT_ID_PATTERN);

function parseNewKeyArgs(argv: string[]): { tenant: string; label?: string; expiresAt?: string } | string {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { tenant: { type: 'string' }, label: { type: 'string' }, 'expires-at': { type: 'string' } },
      strict: true,
    }));
  } catch (error) {
    return (error as Error).message;
  }
  const { tenant, label, 'expires-at': expiresAt } = values;
  if (tenant === undefined) return 'missing --tenant';
  if (!TENANT_ID.test(tenant)) {
    return `invalid tenant id "${tenant}": must be ${TENANT_ID_DESCRIPTION}`;
  }
  if (label === '') return '--label must not be empty';
  if (expiresAt !== undefined && !isRfc3339DateTime(expiresAt)) {
    return `invalid --expires-at "${expiresAt}": use an RFC 3339 date and time such as 2027-06-30T00:00:00Z`;
  }
  return {
    tenant,
    ...(label === undefined ? {} : { label }),
    ...(expiresAt === undefined ? {} : { expiresAt: toIsoDateTime(expiresAt) }),
  };
}

export function newKeyCommand(argv: string[]): Promise<number> {
  const args = parseNewKeyArgs(argv);
  if (typeof args === 'string') {
    process.stderr.write(`${args}\n${USAGE}`);
    return Promise.resolve(EXIT_INVALID);
  }
  const { key, sha256, prefix } = generateTenantKey();
  // JSON strings are valid YAML double-quoted scalars, so any label is pasted safely.
  const members = [
    `sha256: "${sha256}"`,
    `prefix: "${prefix}"`,
    ...(args.label === undefined ? [] : [`label: ${JSON.stringify(args.label)}`]),
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
