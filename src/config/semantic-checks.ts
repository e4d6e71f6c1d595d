// The rules a JSON Schema cannot express: references between tenants, keys and credentials.
import { modelGlobProblem } from './model-globs.ts';
import { formatPath, type ConfigProblem } from './problems.ts';
import type { GatewayConfig } from './schema.ts';
import { MAX_LIMIT_TIMES_WINDOW_SECONDS } from '../ratelimit/gcra.ts';

function checkUniqueTenantIds(config: GatewayConfig, problems: ConfigProblem[]): void {
  const firstIndex = new Map<string, number>();
  config.tenants.forEach((tenant, index) => {
    const earlier = firstIndex.get(tenant.id);
    if (earlier === undefined) firstIndex.set(tenant.id, index);
    else {
      problems.push({
        path: formatPath(['tenants', index, 'id']),
        message: `tenant id "${tenant.id}" is already used by ${formatPath(['tenants', earlier])}`,
      });
    }
  });
}

// A hash listed twice would make one key authenticate as two tenants, or hide a label and an expiry.
function checkUniqueKeyHashes(config: GatewayConfig, problems: ConfigProblem[]): void {
  const firstPath = new Map<string, string>();
  config.tenants.forEach((tenant, tenantIndex) => {
    tenant.keys.forEach((key, keyIndex) => {
      const path = formatPath(['tenants', tenantIndex, 'keys', keyIndex, 'sha256']);
      const earlier = firstPath.get(key.sha256);
      if (earlier === undefined) firstPath.set(key.sha256, path);
      else problems.push({ path, message: `the same key hash is already listed at ${earlier}` });
    });
  });
}

function checkLimitIds(config: GatewayConfig, problems: ConfigProblem[]): void {
  config.tenants.forEach((tenant, tenantIndex) => {
    const seen = new Set<string>();
    tenant.limits.forEach((limit, limitIndex) => {
      if (seen.has(limit.id)) {
        problems.push({
          path: formatPath(['tenants', tenantIndex, 'limits', limitIndex, 'id']),
          message: `limit id "${limit.id}" is used twice in tenant "${tenant.id}"`,
        });
      }
      seen.add(limit.id);
      if (limit.limit * limit.windowSeconds > MAX_LIMIT_TIMES_WINDOW_SECONDS) {
        problems.push({
          path: formatPath(['tenants', tenantIndex, 'limits', limitIndex, 'limit']),
          message: `limit × windowSeconds must be at most ${MAX_LIMIT_TIMES_WINDOW_SECONDS} (the limiter's exact arithmetic)`,
        });
      }
    });
  });
}

function checkCredentials(config: GatewayConfig, problems: ConfigProblem[]): void {
  const configured = Object.keys(config.upstream.credentials);
  const tenantsByCredential = Map.groupBy(config.tenants, (tenant) => tenant.credential);
  config.tenants.forEach((tenant, index) => {
    if (!configured.includes(tenant.credential)) {
      const known = configured.length === 0 ? 'none is configured' : `configured: ${configured.join(', ')}`;
      problems.push({
        path: formatPath(['tenants', index, 'credential']),
        message: `unknown credential "${tenant.credential}" (upstream.credentials: ${known})`,
      });
    }
    // A passthrough tenant sees the upstream account's usage and keys: only its own account is safe to show.
    const sharers = (tenantsByCredential.get(tenant.credential) ?? []).filter((other) => other !== tenant);
    if (tenant.account === 'passthrough' && sharers.length > 0) {
      problems.push({
        path: formatPath(['tenants', index, 'account']),
        message: `passthrough needs a credential of its own, but credential "${tenant.credential}" is also used by ${sharers.map((other) => `"${other.id}"`).join(', ')}`,
      });
    }
  });
}

function checkModelGlobs(config: GatewayConfig, problems: ConfigProblem[]): void {
  config.tenants.forEach((tenant, tenantIndex) => {
    const models = tenant.policy.models;
    for (const list of ['allow', 'deny'] as const) {
      models?.[list]?.forEach((glob, globIndex) => {
        const problem = modelGlobProblem(glob);
        if (problem !== undefined) {
          problems.push({
            path: formatPath(['tenants', tenantIndex, 'policy', 'models', list, globIndex]),
            message: problem,
          });
        }
      });
    }
  });
}

export function checkConfigSemantics(config: GatewayConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  checkUniqueTenantIds(config, problems);
  checkUniqueKeyHashes(config, problems);
  checkLimitIds(config, problems);
  checkCredentials(config, problems);
  checkModelGlobs(config, problems);
  return problems;
}
