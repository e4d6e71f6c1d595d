// The rules a JSON Schema cannot express: references between tenants, keys and credentials, and what a
// client library makes of a URL. They read only the parts of the file that passed the schema
// (src/config/well-formed-parts.ts).
import { MAX_LIMIT_TIMES_WINDOW_SECONDS } from './limit-bounds.ts';
import { firstMatchingGlob, modelGlobProblem } from './model-globs.ts';
import { formatPath, type ConfigProblem } from './problems.ts';
import { redisUrlProblem } from './redis-url.ts';
import type { TenantConfig } from './schema.ts';
import type { WellFormedParts } from './well-formed-parts.ts';

type Members = WellFormedParts['tenantMembers'];

function checkUniqueTenantIds(tenants: Members, problems: ConfigProblem[]): void {
  const firstIndex = new Map<string, number>();
  for (const { index, id } of tenants) {
    if (id === undefined) continue;
    const earlier = firstIndex.get(id);
    if (earlier === undefined) firstIndex.set(id, index);
    else {
      problems.push({
        path: formatPath(['tenants', index, 'id']),
        message: `tenant id "${id}" is already used by ${formatPath(['tenants', earlier])}`,
      });
    }
  }
}

// A hash listed twice would make one key authenticate as two tenants, or hide a label and an expiry.
function checkUniqueKeyHashes(tenants: Members, problems: ConfigProblem[]): void {
  const firstPath = new Map<string, string>();
  for (const { index: tenantIndex, keys } of tenants) {
    for (const { index: keyIndex, item: key } of keys) {
      const path = formatPath(['tenants', tenantIndex, 'keys', keyIndex, 'sha256']);
      const earlier = firstPath.get(key.sha256);
      if (earlier === undefined) firstPath.set(key.sha256, path);
      else problems.push({ path, message: `the same key hash is already listed at ${earlier}` });
    }
  }
}

function checkLimitIds(tenants: Members, problems: ConfigProblem[]): void {
  for (const { index: tenantIndex, id: tenantId, limits } of tenants) {
    const seen = new Set<string>();
    for (const { index: limitIndex, item: limit } of limits) {
      if (seen.has(limit.id)) {
        problems.push({
          path: formatPath(['tenants', tenantIndex, 'limits', limitIndex, 'id']),
          message: `limit id "${limit.id}" is used twice in tenant "${tenantId ?? tenantIndex}"`,
        });
      }
      seen.add(limit.id);
      if (limit.limit * limit.windowSeconds > MAX_LIMIT_TIMES_WINDOW_SECONDS) {
        problems.push({
          path: formatPath(['tenants', tenantIndex, 'limits', limitIndex, 'limit']),
          message: `limit × windowSeconds must be at most ${MAX_LIMIT_TIMES_WINDOW_SECONDS} (the limiter's exact arithmetic)`,
        });
      }
    }
  }
}

// Webhook ids name deliveries to their tenant; a URL is judged for its address only at each attempt
// (docs/webhooks.md), but one that is not an http(s) URL is a mistake to report now.
function checkWebhooks(tenants: Members, problems: ConfigProblem[]): void {
  for (const { index: tenantIndex, id, webhooks } of tenants) {
    const seen = new Set<string>();
    for (const { index: webhookIndex, item: webhook } of webhooks) {
      if (seen.has(webhook.id)) {
        problems.push({
          path: formatPath(['tenants', tenantIndex, 'webhooks', webhookIndex, 'id']),
          message: `webhook id "${webhook.id}" is used twice in tenant "${id ?? tenantIndex}"`,
        });
      }
      seen.add(webhook.id);
      if (!URL.canParse(webhook.url)) {
        problems.push({
          path: formatPath(['tenants', tenantIndex, 'webhooks', webhookIndex, 'url']),
          message: 'must be an http or https URL',
        });
      }
    }
  }
}

function checkCredentialReferences(
  tenants: Members,
  configured: string[] | undefined,
  problems: ConfigProblem[],
): void {
  // When upstream.credentials is not even a mapping, its shape problem says all there is to say.
  if (configured === undefined) return;
  for (const { index, credential } of tenants) {
    if (credential !== undefined && !configured.includes(credential)) {
      const known = configured.length === 0 ? 'none is configured' : `configured: ${configured.join(', ')}`;
      problems.push({
        path: formatPath(['tenants', index, 'credential']),
        message: `unknown credential "${credential}" (upstream.credentials: ${known})`,
      });
    }
  }
}

function checkPassthroughAccounts(tenants: Members, problems: ConfigProblem[]): void {
  const tenantsByCredential = Map.groupBy(
    tenants.filter((tenant) => tenant.credential !== undefined),
    ({ credential }) => credential,
  );
  for (const { index, credential, account } of tenants) {
    if (account !== 'passthrough' || credential === undefined) continue;
    // A passthrough tenant sees the upstream account's usage and keys: only its own account is safe to show.
    const sharers = (tenantsByCredential.get(credential) ?? []).filter((other) => other.index !== index);
    if (sharers.length > 0) {
      problems.push({
        path: formatPath(['tenants', index, 'account']),
        message: `passthrough needs a credential of its own, but credential "${credential}" is also used by ${sharers.map((other) => `"${other.id ?? formatPath(['tenants', other.index])}"`).join(', ')}`,
      });
    }
  }
}

function checkModelGlobs(tenants: Members, problems: ConfigProblem[]): void {
  for (const { index: tenantIndex, policy } of tenants) {
    const models = policy?.models;
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
  }
}

/**
 * Why some image create of `tenant` would match no `pricing.images` entry, or undefined when each has a
 * price. An allow list restricts what is forwarded only in enforce mode; an allowed glob counts as priced
 * when a price glob matches its text (a price for `vendor@*` covers the allowed `vendor@fast-*`).
 */
function unpricedImages(policy: TenantConfig['policy'], priceGlobs: readonly string[]): string | undefined {
  if (priceGlobs.includes('*')) return undefined;
  const models = policy.mode === 'enforce' ? policy.models : undefined;
  if (models?.allowServiceDefault ?? true) return 'an image create without model';
  if (models?.allow === undefined) return 'an image create with any model';
  const unpriced = models.allow.find((glob) => firstMatchingGlob(priceGlobs, glob) === undefined);
  return unpriced === undefined ? undefined : `an image create with a model matching "${unpriced}"`;
}

// A budget reserves each create's expected cost; a create without a price could not be held to it.
function checkPricesForBudgets(
  tenants: Members,
  priceGlobs: string[] | undefined,
  problems: ConfigProblem[],
): void {
  if (priceGlobs === undefined) return;
  priceGlobs.forEach((glob, index) => {
    const problem = glob === '*' ? undefined : modelGlobProblem(glob);
    if (problem !== undefined) {
      problems.push({ path: formatPath(['pricing', 'images', index, 'model']), message: problem });
    }
  });
  for (const { index, budget, policy } of tenants) {
    // A policy with a problem of its own cannot say which models a create may name.
    if (budget === undefined || policy === undefined) continue;
    const unpriced = unpricedImages(policy, priceGlobs);
    if (unpriced !== undefined) {
      problems.push({
        path: formatPath(['tenants', index, 'budget']),
        message: `${unpriced} matches no pricing.images entry; a budget needs a price for every create (add a "*" entry, or narrow policy.models)`,
      });
    }
  }
}

function checkRedisUrl(url: string | undefined, problems: ConfigProblem[]): void {
  const problem = url === undefined ? undefined : redisUrlProblem(url);
  if (problem !== undefined) problems.push({ path: formatPath(['store', 'redis', 'url']), message: problem });
}

export function checkConfigSemantics(parts: WellFormedParts): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  checkUniqueTenantIds(parts.tenantMembers, problems);
  checkUniqueKeyHashes(parts.tenantMembers, problems);
  checkLimitIds(parts.tenantMembers, problems);
  checkWebhooks(parts.tenantMembers, problems);
  checkCredentialReferences(parts.tenantMembers, parts.credentialNames, problems);
  checkPassthroughAccounts(parts.tenantMembers, problems);
  checkModelGlobs(parts.tenantMembers, problems);
  checkPricesForBudgets(parts.tenantMembers, parts.imagePriceGlobs, problems);
  checkRedisUrl(parts.redisUrl, problems);
  return problems;
}
