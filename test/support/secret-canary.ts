// The secret canary (docs/security.md#in-logs-and-metrics: no key or token in a log line, a metric, an error body or a
// response header). The suites' tenant keys and upstream tokens carry a distinctive marker; whatever gengate
// produces in a test (log lines at every level, process output, response heads and bodies, metrics, the
// requests the upstream received) is searched for the markers as text and in the encodings a careless log
// line would use (a Buffer in a pino line is a list of byte values; inspect() shows hex; some code base64s).
// Findings are collected per test file (each file runs in a module graph of its own) and fail the test
// they occurred in, or the file (test/support/secret-canary-setup.ts).
import { randomInt } from 'node:crypto';
import { expect } from 'vitest';
import { hashTenantKey, type TenantKey } from '../../src/auth/keys.ts';

/** In every canary tenant key, right after the 8 characters the configuration keeps as its prefix. */
export const TENANT_KEY_MARKER = 'CANARYkey';
/** In every canary upstream token. */
export const UPSTREAM_TOKEN_MARKER = 'CANARYtok';

/** The upstream tokens of the suites' credentials, by credential name. */
export const CANARY_UPSTREAM_TOKENS = {
  shared: `tok-${UPSTREAM_TOKEN_MARKER}-shared-0f4e9c2b7a61d385`,
  research: `tok-${UPSTREAM_TOKEN_MARKER}-research-5b8d1e7c3f29a604`,
} as const;

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const KEY_PREFIX_LENGTH = 8;

function randomBase62(length: number): string {
  return Array.from({ length }, () => BASE62.charAt(randomInt(BASE62.length))).join('');
}

/**
 * A tenant key shaped like generateTenantKey()'s (`ggk_` and 40 base62 characters), with the marker right
 * after the prefix: the prefix gengate may show (account.keys' partialKey) stays random, so keys can be told
 * apart, and any leak of more than the prefix carries the marker.
 */
export function canaryTenantKey(): TenantKey {
  const random = KEY_PREFIX_LENGTH - 'ggk_'.length;
  const key = `ggk_${randomBase62(random)}${TENANT_KEY_MARKER}${randomBase62(40 - random - TENANT_KEY_MARKER.length)}`;
  return { key, sha256: hashTenantKey(key), prefix: key.slice(0, KEY_PREFIX_LENGTH) };
}

interface Needle {
  secret: string;
  form: string;
  text: string;
}

/** The forms the marker takes in text, in base64 (at each of its three alignments), in hex, as byte values. */
function needlesOf(secret: string, marker: string): Needle[] {
  const bytes = Buffer.from(marker, 'latin1');
  const needles: Needle[] = [{ secret, form: 'text', text: marker }];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    // Only the groups of three bytes that are all the marker's do not depend on what surrounds it.
    const stable = encoded.slice(offset === 0 ? 0 : 4, Math.floor((offset + bytes.length) / 3) * 4);
    needles.push({ secret, form: 'base64', text: stable });
    needles.push({ secret, form: 'base64url', text: stable.replaceAll('+', '-').replaceAll('/', '_') });
  }
  const hex = bytes.toString('hex');
  needles.push({ secret, form: 'hex', text: hex }, { secret, form: 'hex', text: hex.toUpperCase() });
  needles.push({ secret, form: 'spaced hex (inspect)', text: hex.match(/../g)?.join(' ') ?? hex });
  needles.push({ secret, form: 'byte values (JSON of a Buffer)', text: [...bytes].join(',') });
  return needles;
}

const TENANT_KEY_NEEDLES = needlesOf('tenant key', TENANT_KEY_MARKER);
const NEEDLES = [...TENANT_KEY_NEEDLES, ...needlesOf('upstream token', UPSTREAM_TOKEN_MARKER)];
const LONGEST_NEEDLE = Math.max(...NEEDLES.map((needle) => needle.text.length));
const EXCERPT_CONTEXT = 60;

export interface CanaryFinding {
  /** What went wrong, e.g. "tenant key (byte values (JSON of a Buffer))". */
  what: string;
  /** Where gengate produced it, e.g. "log line (trace)" or "response to GET http://…/v1/…". */
  source: string;
  /** The test that was running (or the file's hooks). */
  during: string;
  excerpt: string;
}

const findings: CanaryFinding[] = [];
// Set from each test's first hook to its last (secret-canary-setup.ts): vitest's state keeps the last
// test's name after it has ended.
let inTest = false;

export function markTestRunning(running: boolean): void {
  inTest = running;
}

/** The name of the running test, for findings; the file's own hooks say so. */
export function currentTestName(): string {
  const name = inTest ? expect.getState().currentTestName : undefined;
  return name ?? 'the file’s hooks (outside any test)';
}

/** Records a finding that is not a search hit (e.g. an upstream request without its token). */
export function recordCanaryFinding(finding: CanaryFinding): void {
  findings.push(finding);
}

function search(source: string, text: string, from: number, during: string, needles = NEEDLES): void {
  for (const needle of needles) {
    let index = text.indexOf(needle.text);
    while (index >= 0) {
      if (index + needle.text.length > from) {
        const excerpt = text.slice(
          Math.max(0, index - EXCERPT_CONTEXT),
          index + needle.text.length + EXCERPT_CONTEXT,
        );
        findings.push({ what: `${needle.secret} (${needle.form})`, source, during, excerpt });
      }
      index = text.indexOf(needle.text, index + 1);
    }
  }
}

function asText(produced: string | Uint8Array): string {
  // latin1 maps every byte to one character: nothing is lost to decoding, and the markers are ASCII.
  return typeof produced === 'string' ? produced : Buffer.from(produced).toString('latin1');
}

/** Searches one whole thing gengate produced (a log line, a response body, a metrics page). */
export function searchProduced(
  source: string,
  produced: string | Uint8Array,
  during = currentTestName(),
): void {
  search(source, asText(produced), 0, during);
}

/** Searches what may carry an upstream token, but never a tenant key (what the upstream receives). */
export function searchForTenantKeys(source: string, produced: string | Uint8Array, during: string): void {
  search(source, asText(produced), 0, during, TENANT_KEY_NEEDLES);
}

/**
 * A search over a stream delivered in chunks (a socket's writes, a process's stderr): a marker cut in two
 * by a chunk boundary is still found, and found once.
 */
export function streamSearch(source: string): (chunk: string | Uint8Array) => void {
  let tail = '';
  return (chunk) => {
    const text = tail + asText(chunk);
    search(source, text, tail.length, currentTestName());
    tail = text.slice(-(LONGEST_NEEDLE - 1));
  };
}

/** The findings so far, removed from the collection. */
export function takeCanaryFindings(): CanaryFinding[] {
  return findings.splice(0);
}

export function describeCanaryFindings(found: readonly CanaryFinding[]): string {
  const lines = found.map(
    (finding) =>
      `- ${finding.what} in ${finding.source}, during "${finding.during}":\n    …${JSON.stringify(finding.excerpt)}…`,
  );
  return `the secret canary found what gengate must never produce:\n${lines.join('\n')}`;
}
