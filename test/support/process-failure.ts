// Preloaded into a child process (`node --import`) to make it fail on demand, as a bug would: on
// SIGUSR2 it throws an uncaught exception or leaves a rejected promise unhandled, as
// GENGATE_TEST_FAILURE says. Only test processes load it, through failureOnSignal() below.

const FAILURE_VARIABLE = 'GENGATE_TEST_FAILURE';
const FAILURES = ['uncaught-exception', 'unhandled-rejection'] as const;
export type TestFailure = (typeof FAILURES)[number];

/** The node options and environment that start a child process failing this way on SIGUSR2. */
export function failureOnSignal(failure: TestFailure): { nodeArgs: string[]; env: Record<string, string> } {
  return { nodeArgs: ['--import', import.meta.url], env: { [FAILURE_VARIABLE]: failure } };
}

const failure = process.env[FAILURE_VARIABLE];
if (failure !== undefined) {
  if (!(FAILURES as readonly string[]).includes(failure))
    throw new Error(`${FAILURE_VARIABLE} must be one of ${FAILURES.join(', ')}`);
  process.on('SIGUSR2', () => {
    // From a timer, as the failures seen in production came (a sampler's call that threw).
    setTimeout(() => {
      if (failure === 'uncaught-exception') throw new Error('a bug the test planted');
      void Promise.reject(new Error('a rejection the test planted'));
    }, 0);
  });
}
