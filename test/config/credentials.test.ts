import { mkdir, mkdtemp, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createCredentialStore, type CredentialStore } from '../../src/config/credentials.ts';
import { parseConfigText } from '../../src/config/load.ts';
import { waitFor } from '../support/wait-for.ts';

const FAST = { debounceMs: 10, pollIntervalMs: 50 };

interface LogEntry {
  level: 'info' | 'warn';
  fields: unknown;
  message: string;
}

function capturingLogger(entries: LogEntry[]) {
  return {
    info: (fields: unknown, message: string) => entries.push({ level: 'info', fields, message }),
    warn: (fields: unknown, message: string) => entries.push({ level: 'warn', fields, message }),
  } as unknown as NonNullable<Parameters<typeof createCredentialStore>[1]['logger']>;
}

describe('createCredentialStore', () => {
  let folder: string;
  let store: CredentialStore | undefined;
  const logs: LogEntry[] = [];

  beforeEach(async () => {
    folder = await mkdtemp(join(tmpdir(), 'gengate-credentials-'));
    logs.length = 0;
  });
  afterEach(async () => {
    store?.close();
    store = undefined;
    await rm(folder, { recursive: true, force: true });
  });

  async function openStore(credentialsYaml: string, env: NodeJS.ProcessEnv = {}): Promise<CredentialStore> {
    const config = await parseConfigText(`upstream:\n  credentials:\n${credentialsYaml}`, {
      env,
      baseDir: folder,
    });
    store = await createCredentialStore(config.upstream.credentials, {
      baseDir: folder,
      logger: capturingLogger(logs),
      ...FAST,
    });
    return store;
  }

  it('serves env tokens as read when the configuration was loaded, trimmed', async () => {
    const env: NodeJS.ProcessEnv = { MAXAI_TOKEN: 'token-from-env\n' };
    const credentials = await openStore('    shared: { env: MAXAI_TOKEN }\n', env);
    env.MAXAI_TOKEN = 'changed-later';
    expect(credentials.get('shared')).toBe('token-from-env');
    expect(() => credentials.get('other')).toThrow('unknown upstream credential "other"');
  });

  it('reads a file token relative to the configuration folder and sees the file rewritten', async () => {
    await writeFile(join(folder, 'token'), 'first-token\n');
    const credentials = await openStore('    research: { file: token }\n');
    expect(credentials.get('research')).toBe('first-token');

    await writeFile(join(folder, 'token'), 'second-token\n');
    await waitFor('the rewritten token', () => credentials.get('research') === 'second-token');
    // A read in the middle of the write may also have warned about an empty file; that is fine.
    expect(logs.filter((entry) => entry.level === 'info')).toEqual([
      {
        level: 'info',
        fields: { credential: 'research', file: join(folder, 'token') },
        message: 'credential reloaded',
      },
    ]);
  });

  it('follows a Kubernetes secret mount whose ..data symlink is swapped', async () => {
    await mkdir(join(folder, '..2026_01_01'));
    await writeFile(join(folder, '..2026_01_01', 'token'), 'old-token');
    await symlink('..2026_01_01', join(folder, '..data'));
    await symlink(join('..data', 'token'), join(folder, 'token'));
    const credentials = await openStore(`    research: { file: ${join(folder, 'token')} }\n`);
    expect(credentials.get('research')).toBe('old-token');

    // What the kubelet does: write a new timestamped folder, then atomically rename a new ..data link.
    await mkdir(join(folder, '..2026_02_01'));
    await writeFile(join(folder, '..2026_02_01', 'token'), 'rotated-token');
    await symlink('..2026_02_01', join(folder, '..data_tmp'));
    await rename(join(folder, '..data_tmp'), join(folder, '..data'));
    await rm(join(folder, '..2026_01_01'), { recursive: true });

    await waitFor('the rotated token', () => credentials.get('research') === 'rotated-token');
  });

  it('keeps the last good token when the file vanishes or is emptied, and never logs the token', async () => {
    await writeFile(join(folder, 'token'), 'good-token');
    const credentials = await openStore('    research: { file: token }\n');

    await writeFile(join(folder, 'token'), '\n');
    await waitFor('a warning about the empty file', () => logs.length === 1);
    await unlink(join(folder, 'token'));
    await waitFor('a warning about the missing file', () => logs.length === 2);

    expect(credentials.get('research')).toBe('good-token');
    const file = join(folder, 'token');
    expect(logs).toEqual([
      {
        level: 'warn',
        fields: { credential: 'research', file, reason: 'the file is empty' },
        message: 'credential file unusable; keeping the last token',
      },
      {
        level: 'warn',
        fields: { credential: 'research', file, reason: 'cannot read the file (ENOENT)' },
        message: 'credential file unusable; keeping the last token',
      },
    ]);
    expect(JSON.stringify(logs)).not.toContain('good-token');
  });

  it('refuses to start with a missing or empty token file, naming every such credential', async () => {
    await writeFile(join(folder, 'empty'), '  \n');
    const error: unknown = await openStore('    a: { file: absent }\n    b: { file: empty }\n').catch(
      (rejection: unknown) => rejection,
    );
    expect(error).toMatchObject({
      name: 'ConfigError',
      problems: [
        {
          path: 'upstream.credentials.a.file',
          message: `${join(folder, 'absent')}: cannot read the file (ENOENT)`,
        },
        { path: 'upstream.credentials.b.file', message: `${join(folder, 'empty')}: the file is empty` },
      ],
    });
  });
});
