// docs/configuration.md#the-file-as-a-whole: an invalid file stops gengate at start with exit code 2 and every problem listed,
// the credential files among them, in one run.
import { dirname, join } from 'node:path';
import { expect, test } from 'vitest';
import { EXIT_INVALID } from '../../src/cli/exit-codes.ts';
import { startGatewayProcess, writeTempConfig } from '../support/gateway-process.ts';

test('start-up lists shape, reference and credential problems together, exit 2', async () => {
  const configPath = await writeTempConfig(
    [
      'server: { host: 127.0.0.1, port: 0, colour: blue }',
      'admin: { host: 127.0.0.1, port: 0 }',
      'upstream: { credentials: { shared: { file: absent.token } } }',
      'store: { kind: memory }',
      'tenants:',
      '  - { id: team-a, credential: archive, keys: [] }',
      '',
    ].join('\n'),
  );
  const missingToken = join(dirname(configPath), 'absent.token');
  await expect(startGatewayProcess(configPath)).rejects.toThrow(
    new Error(
      `gengate exited with ${EXIT_INVALID} before it was ready: gengate: invalid configuration ${configPath} (from --config)\n` +
        '  server: unknown key "colour"\n' +
        '  tenants[0].credential: unknown credential "archive" (upstream.credentials: configured: shared)\n' +
        `  upstream.credentials.shared.file: ${missingToken}: cannot read the file (ENOENT)\n`,
    ),
  );
});
