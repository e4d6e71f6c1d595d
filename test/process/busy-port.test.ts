// A port already taken (a second copy started by mistake, an old process not yet gone) stops gengate
// with one line naming the address and the setting, and exit code 3: no stack trace to read through.
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { spawn } from 'node:child_process';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { EXIT_CANNOT_LISTEN } from '../../src/cli/exit-codes.ts';
import { oneTenantConfig, startGatewayProcess, writeTempConfig } from '../support/gateway-process.ts';

let holder: Server;
let heldPort: number;

beforeEach(async () => {
  holder = createServer();
  holder.listen(0, '127.0.0.1');
  await once(holder, 'listening');
  heldPort = (holder.address() as { port: number }).port;
});
afterEach(async () => {
  holder.close();
  await once(holder, 'close');
});

function configHolding(section: 'server' | 'admin'): Promise<string> {
  const config = oneTenantConfig({ upstreamUrl: 'http://127.0.0.1:1', keys: [] }).replace(
    `${section}: { host: 127.0.0.1, port: 0`,
    `${section}: { host: 127.0.0.1, port: ${heldPort}`,
  );
  expect(config).toContain(`port: ${heldPort}`);
  return writeTempConfig(config);
}

const refusal = (setting: string) =>
  `gengate exited with ${EXIT_CANNOT_LISTEN} before it was ready: ` +
  `gengate: cannot listen on 127.0.0.1:${heldPort} (${setting}): address already in use\n`;

test.each(['server', 'admin'] as const)('the %s port in use: one line on stderr, exit 3', async (section) => {
  const configPath = await configHolding(section);
  await expect(startGatewayProcess(configPath, { SHARED_TOKEN: 'token' })).rejects.toThrow(
    new Error(refusal(`${section}.port`)),
  );
});

test('the demo simulator port in use: one line on stderr, exit 3', async () => {
  const config = [
    oneTenantConfig({ upstreamUrl: `http://127.0.0.1:${heldPort}`, keys: [] }),
    `simulator: { enabled: true, host: 127.0.0.1, port: ${heldPort} }`,
    '',
  ].join('\n');
  await expect(startGatewayProcess(await writeTempConfig(config), { SHARED_TOKEN: 'token' })).rejects.toThrow(
    new Error(refusal('simulator.port')),
  );
});

test('gengate simulator on a port in use: one line on stderr, exit 3', async () => {
  const child = spawn(process.execPath, ['src/cli.ts', 'simulator', '--port', String(heldPort)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = (await once(child, 'exit')) as [number | null];
  expect({ code, stderr }).toEqual({
    code: EXIT_CANNOT_LISTEN,
    stderr: `gengate simulator: cannot listen on 127.0.0.1:${heldPort} (--port): address already in use\n`,
  });
});

// Regression: a host that does not resolve crashed the gateway with getaddrinfo's stack trace.
test('a server host that does not resolve: one line naming server.host, exit 2', async () => {
  const config = oneTenantConfig({ upstreamUrl: 'http://127.0.0.1:1', keys: [] }).replace(
    'server: { host: 127.0.0.1,',
    'server: { host: 999.1.1.1,',
  );
  expect(config).toContain('host: 999.1.1.1');
  // One short try of the resolver, wherever no DNS server answers (glibc reads RES_OPTIONS).
  const env = { SHARED_TOKEN: 'token', RES_OPTIONS: 'timeout:1 attempts:1' };
  await expect(startGatewayProcess(await writeTempConfig(config), env)).rejects.toThrow(
    /^gengate exited with 2 before it was ready: gengate: server\.host 999\.1\.1\.1: not an IP address, nor a name that resolves \((ENOTFOUND|EAI_AGAIN)\)\n$/,
  );
});
