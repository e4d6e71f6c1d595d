// One attempt at one webhook: resolve the URL's name once, judge the address, connect to that very
// address (no second lookup can rebind it), POST, read at most `maxResponseBytes` of the answer, all
// within `timeoutMs`. Redirects are not followed: a 3xx is an answer like any other non-2xx.
import { lookup, Resolver } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { DestinationJudge, DestinationRefusal } from './destinations.ts';
import { parseAddress } from './destinations.ts';

/** Resolves a host name to its addresses, in the order to try them. */
export type ResolveHost = (hostname: string) => Promise<string[]>;

export type AttemptResult =
  | { kind: 'answered'; status: number }
  | { kind: 'refused'; reason: DestinationRefusal | 'unresolvable' }
  | { kind: 'failed'; reason: 'timeout' | 'connection' };

export interface SendOptions {
  judge: DestinationJudge;
  resolveHost: ResolveHost;
  timeoutMs: number;
  maxResponseBytes: number;
  /** Ends every attempt in flight at once: the gateway is shutting down. */
  shutdown?: AbortSignal;
}

/** The machine's resolver (getaddrinfo: /etc/hosts, search domains), every address it knows. */
export const resolveWithSystem: ResolveHost = async (hostname) =>
  (await lookup(hostname, { all: true, order: 'verbatim' })).map((entry) => entry.address);

/**
 * Asks the given DNS servers (`host:port`) directly, IPv4 answers first: for a resolver of the
 * operator's choosing, and for tests, which must never depend on the machine's resolver.
 */
export function resolveWithServers(servers: readonly string[]): ResolveHost {
  const resolver = new Resolver({ timeout: 2_000, tries: 1 });
  resolver.setServers([...servers]);
  return async (hostname) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
    const addresses = [v4, v6].flatMap((answer) => (answer.status === 'fulfilled' ? answer.value : []));
    if (addresses.length === 0) throw new Error(`${hostname} does not resolve`);
    return addresses;
  };
}

type Address = NonNullable<ReturnType<typeof parseAddress>>;

// The first address the judge accepts; otherwise the refusal of the first address (the one a client
// following the resolver's order would have used).
async function chooseAddress(
  url: URL,
  options: SendOptions,
): Promise<{ address: Address } | { refused: DestinationRefusal | 'unresolvable' }> {
  const literal = parseAddress(url.hostname);
  let texts: string[];
  if (literal !== undefined) texts = [url.hostname];
  else {
    try {
      texts = await options.resolveHost(url.hostname);
    } catch {
      return { refused: 'unresolvable' };
    }
  }
  let firstRefusal: DestinationRefusal | 'unresolvable' = 'unresolvable';
  for (const [index, text] of texts.entries()) {
    const address = parseAddress(text);
    if (address === undefined) continue;
    const refusal = options.judge.judge(url.protocol, url.hostname, address);
    if (refusal === undefined) return { address };
    if (index === 0) firstRefusal = refusal;
  }
  return { refused: firstRefusal };
}

/** Drains at most `limit` bytes of an answer, then lets go of the connection. */
function readBounded(response: IncomingMessage, limit: number): Promise<void> {
  return new Promise((resolveRead) => {
    let read = 0;
    response.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read >= limit) {
        response.destroy();
        resolveRead();
      }
    });
    response.on('end', () => {
      resolveRead();
    });
    response.on('error', () => {
      resolveRead();
    });
    response.on('close', () => {
      resolveRead();
    });
  });
}

export async function sendAttempt(
  url: URL,
  headers: Record<string, string>,
  body: string,
  options: SendOptions,
): Promise<AttemptResult> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.shutdown === undefined ? timeout : AbortSignal.any([timeout, options.shutdown]);
  const chosen = await Promise.race([
    chooseAddress(url, options),
    new Promise<'timeout'>((resolveTimeout) => {
      signal.addEventListener('abort', () => {
        resolveTimeout('timeout');
      });
    }),
  ]);
  if (chosen === 'timeout') return { kind: 'failed', reason: 'timeout' };
  if ('refused' in chosen) return { kind: 'refused', reason: chosen.refused };
  const https = url.protocol === 'https:';
  const host = chosen.address.toString();
  return new Promise<AttemptResult>((resolveAttempt) => {
    const request = (https ? httpsRequest : httpRequest)(
      {
        host,
        family: chosen.address.kind() === 'ipv4' ? 4 : 6,
        port: url.port === '' ? (https ? 443 : 80) : Number(url.port),
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        // The certificate is checked against the URL's name, not the address connected to.
        ...(https && parseAddress(url.hostname) === undefined ? { servername: url.hostname } : {}),
        headers: {
          ...headers,
          host: url.host,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        },
        agent: false,
        signal,
      },
      (response) => {
        void readBounded(response, options.maxResponseBytes).then(() => {
          resolveAttempt({ kind: 'answered', status: response.statusCode ?? 0 });
        });
      },
    );
    request.on('error', () => {
      resolveAttempt({ kind: 'failed', reason: signal.aborted ? 'timeout' : 'connection' });
    });
    request.end(body);
  });
}
