// Policies as the loader produces them, with the schema's defaults filled in.
import { parseConfigText } from '../../src/config/load.ts';
import type { TenantPolicy } from '../../src/config/schema.ts';

/** The policy of a one-tenant configuration whose `policy:` block is `policyYaml` (flow style). */
export async function loadPolicy(policyYaml: string): Promise<TenantPolicy> {
  const config = await parseConfigText(
    `upstream: { credentials: { shared: { env: MAXAI_TOKEN } } }
tenants:
  - { id: team-a, credential: shared, keys: [], policy: ${policyYaml} }
`,
    { env: { MAXAI_TOKEN: 'token' }, baseDir: '/etc/gengate' },
  );
  return config.tenants[0]!.policy;
}
