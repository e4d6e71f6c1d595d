// Whether the upstream accepts each of gengate's own credentials. Its 401 or 403 is gengate's problem,
// not the tenant's (src/upstream/answer.ts answers the tenant 502): each refusal is counted and logged
// for the operator, and the credential is marked refused until the upstream next accepts it, so that an
// alert holds while nothing is sent with it. Every credential is checked once at start-up and again when
// its token is rotated, so a wrong token shows before a tenant meets it.
import { randomUUID } from 'node:crypto';
import type { GatewayMetrics } from '../observability/metrics.ts';
import type { UpstreamClient } from './client.ts';
import { headersForUpstream } from './headers.ts';

/** A harmless, documented read of the upstream account: what a check asks with a credential. */
const CHECK_PATH = '/v1/account/keys';

export interface CredentialHealthLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface CredentialHealth {
  /** The upstream answered 401 or 403 to a request carrying the credential. */
  rejected(credential: string): void;
  /** The upstream answered a request carrying the credential with anything else. */
  accepted(credential: string): void;
}

type CredentialMetrics = Pick<GatewayMetrics, 'upstreamCredentialRejections' | 'upstreamCredentialRejected'>;

/** The health of the named credentials, their series at 0 from the start. */
export function createCredentialHealth(
  metrics: CredentialMetrics,
  names: readonly string[],
): CredentialHealth {
  const refused = new Set<string>();
  for (const credential of names) {
    metrics.upstreamCredentialRejections.inc({ credential }, 0);
    metrics.upstreamCredentialRejected.set({ credential }, 0);
  }
  return {
    rejected(credential) {
      metrics.upstreamCredentialRejections.inc({ credential });
      refused.add(credential);
      metrics.upstreamCredentialRejected.set({ credential }, 1);
    },
    accepted(credential) {
      // Most requests find nothing to change: no label lookup on the request path.
      if (!refused.delete(credential)) return;
      metrics.upstreamCredentialRejected.set({ credential }, 0);
    },
  };
}

export type CredentialCheckResult = 'accepted' | 'rejected' | 'unknown';

/**
 * Asks the upstream whether it accepts `credential`'s token. Never throws: an upstream that cannot be
 * reached or answers something else leaves the question open (logged as a warning), and start-up goes
 * on, since the upstream being down says nothing about the token.
 */
export async function checkCredential(
  upstream: Pick<UpstreamClient, 'send'>,
  health: CredentialHealth,
  logger: CredentialHealthLogger,
  credential: string,
  token: string,
): Promise<CredentialCheckResult> {
  let status: number;
  try {
    const response = await upstream.send({
      method: 'GET',
      path: CHECK_PATH,
      headers: headersForUpstream(token, randomUUID(), undefined),
    });
    status = response.status;
  } catch (error) {
    logger.warn(
      { credential, reason: error instanceof Error ? error.message : String(error) },
      'upstream credential not checked: the upstream could not be asked',
    );
    return 'unknown';
  }
  if (status === 401 || status === 403) {
    health.rejected(credential);
    logger.error(
      { credential, upstreamStatus: status },
      'the upstream refused the credential; see the runbook of GengateUpstreamCredentialRejected',
    );
    return 'rejected';
  }
  if (status < 300) {
    health.accepted(credential);
    logger.info({ credential }, 'upstream credential accepted');
    return 'accepted';
  }
  logger.warn({ credential, upstreamStatus: status }, 'upstream credential not checked: unexpected answer');
  return 'unknown';
}
