// `npm run gengate -- simulator` as operators run it: it says where it listens (never the tokens),
// answers, and exits 0 on SIGTERM.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { expect, test } from 'vitest';

const TOKEN = 'sim_cli_test_token_5e7a1c9d3b';

test('runs until SIGTERM, then closes and exits 0', async () => {
  // process.execPath is the Node 24 running the tests, as `npm run gengate` would use.
  const child = spawn(
    process.execPath,
    ['src/cli.ts', 'simulator', '--port', '0', '--token', `ops=${TOKEN}`, '--rpm', '5'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  try {
    const output: string[] = [];
    const listening = new Promise<string>((resolve) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        output.push(line);
        const url = /listening on (http:\/\/\S+)/.exec(line)?.[1];
        if (url !== undefined) resolve(url);
      });
    });
    const url = await Promise.race([
      listening,
      exited.then((code) => Promise.reject(new Error(`the simulator exited with ${code} before listening`))),
    ]);
    expect(output).toEqual([`gengate simulator listening on ${url} (accounts: ops)`]);

    const response = await fetch(`${url}/v1/account/keys`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-ratelimit-limit')).toBe('5');
    expect(((await response.json()) as { data: { userId: string }[] }).data[0]!.userId).toBe('user_ops');

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output.join('\n')).not.toContain(TOKEN);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});

test('a malformed option: exit 2 with one line naming it', async () => {
  const child = spawn(process.execPath, ['src/cli.ts', 'simulator', '--token', 'no-equals-sign'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
  const [code] = (await once(child, 'exit')) as [number | null];
  expect(code).toBe(2);
  expect(stderr.join('')).toBe(
    'gengate simulator: --token must look like NAME=TOKEN (see gengate simulator --help)\n',
  );
});
