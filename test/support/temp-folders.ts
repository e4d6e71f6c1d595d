// Temporary folders a test writes into (configuration files, credential files beside them), removed once
// the test file is done (temp-folders-setup.ts): the gateways reading them are stopped by then. Every run
// of the suites used to leave about fifty in the machine's temporary folder.
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const folders = new Set<string>();

/** A fresh folder under the machine's temporary folder, removed after the test file. */
export async function makeTempFolder(prefix: string): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), prefix));
  folders.add(folder);
  return folder;
}

export function removeTempFolders(): void {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  folders.clear();
}
