// A real OCI registry on loopback for the publishing checks: Debian's docker-registry (the CNCF
// distribution registry), with a configuration and a storage folder of its own on a free port, plain HTTP
// (loopback only), stopped and removed by whoever started it.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../support/free-port.ts';
import { waitFor } from '../../support/wait-for.ts';

export interface OciRegistry {
  /** host:port, as image references and oci:// URLs name it. */
  host: string;
  stop(): Promise<void>;
}

const STARTUP_TIMEOUT_MS = 30_000;

export async function startOciRegistry(): Promise<OciRegistry> {
  const port = await freePort();
  const folder = await mkdtemp(join(tmpdir(), 'gengate-registry-'));
  const config = join(folder, 'config.yml');
  await writeFile(
    config,
    [
      'version: 0.1',
      'log: { level: error, accesslog: { disabled: true } }',
      `storage: { filesystem: { rootdirectory: ${join(folder, 'storage')} } }`,
      `http: { addr: "127.0.0.1:${port}" }`,
      '',
    ].join('\n'),
  );
  const child = spawn('docker-registry', ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const host = `127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await rm(folder, { recursive: true, force: true });
  };
  try {
    // The distribution API's base endpoint answers 200 once the registry serves.
    await waitFor(
      `docker-registry on ${host}`,
      async () => {
        if (child.exitCode !== null) throw new Error(`docker-registry exited: ${stderr}`);
        return (await fetch(`http://${host}/v2/`).catch(() => undefined))?.status === 200;
      },
      STARTUP_TIMEOUT_MS,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { host, stop };
}
