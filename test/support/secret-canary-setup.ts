// Runs in every test file (vitest setupFiles): every response a test fetches is searched for the secret
// canary (test/support/secret-canary.ts), as are the logs, process output, socket writes, metrics and
// upstream requests the shared harnesses feed it. A finding fails the test it occurred in (afterEach), or,
// for what arrives later (a response body still streaming, the lines a gateway logs while it closes),
// the file (afterAll, which runs after the file's own hooks have closed its servers), so `npm test` fails.
import { afterAll, afterEach, beforeEach } from 'vitest';
import {
  describeCanaryFindings,
  markTestRunning,
  searchProduced,
  takeCanaryFindings,
} from './secret-canary.ts';

const fetchWithoutCanary = globalThis.fetch;
const bodiesBeingSearched = new Set<Promise<void>>();

function headText(response: Response): string {
  const lines = [`${response.status} ${response.statusText}`];
  for (const [name, value] of response.headers) lines.push(`${name}: ${value}`);
  return lines.join('\n');
}

globalThis.fetch = async function fetchSearchingAnswers(input, init) {
  const response = await fetchWithoutCanary(input, init);
  const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
  const url = input instanceof Request ? input.url : String(input);
  const source = `the response to ${method} ${url}`;
  searchProduced(source, headText(response));
  // A copy of the body, read alongside the test's own reading of it; an aborted body has nothing to search.
  const searched = response
    .clone()
    .arrayBuffer()
    .then(
      (body) => {
        searchProduced(source, new Uint8Array(body));
      },
      () => undefined,
    )
    .finally(() => bodiesBeingSearched.delete(searched));
  bodiesBeingSearched.add(searched);
  return response;
};

function failOnFindings(): void {
  const found = takeCanaryFindings();
  if (found.length > 0) throw new Error(describeCanaryFindings(found));
}

// The first beforeEach and the last afterEach of every test: this file's hooks are registered first.
beforeEach(() => {
  markTestRunning(true);
});

afterEach(() => {
  markTestRunning(false);
  failOnFindings();
});

afterAll(async () => {
  await Promise.all(bodiesBeingSearched);
  failOnFindings();
});
