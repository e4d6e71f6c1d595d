// nginx (Debian's) in front of the replicas, as a Service or an ingress stands in front of pods: both in
// one upstream block, kept-alive connections to them, and a retry on the other replica only when a
// request could not be delivered (`proxy_next_upstream error timeout`: a POST that reached a replica is
// never sent twice). Runs in the foreground with a scratch prefix, on a free port, as the current user.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../support/free-port.ts';
import { killedOnExit } from '../../support/killed-on-exit.ts';
import { waitFor } from '../../support/wait-for.ts';

export interface Nginx {
  url: string;
  stop(): Promise<void>;
}

function nginxConfig(dir: string, port: number, replicaPorts: readonly number[]): string {
  // max_fails=0: a replica that refused a connection while restarting is tried again at once, as a
  // Service routes to whatever endpoints are ready; nginx's default would shun it for ten seconds.
  const servers = replicaPorts.map((replicaPort) => `    server 127.0.0.1:${replicaPort} max_fails=0;`);
  return [
    'worker_processes 1;',
    `pid ${dir}/nginx.pid;`,
    `error_log ${dir}/error.log warn;`,
    'events { worker_connections 1024; }',
    'http {',
    '  access_log off;',
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
      (kind) => `  ${kind}_temp_path ${dir}/${kind};`,
    ),
    '  upstream gengate {',
    ...servers,
    '    keepalive 32;',
    '  }',
    '  server {',
    `    listen 127.0.0.1:${port};`,
    '    location / {',
    '      proxy_pass http://gengate;',
    '      proxy_http_version 1.1;',
    '      proxy_set_header Connection "";',
    '      proxy_next_upstream error timeout;',
    '    }',
    '  }',
    '}',
    '',
  ].join('\n');
}

export async function startNginx(replicaPorts: readonly number[]): Promise<Nginx> {
  const dir = await mkdtemp(join(tmpdir(), 'gengate-nginx-'));
  // Started as root, nginx's worker runs as an unprivileged user that must reach its temp paths.
  await chmod(dir, 0o755);
  const port = await freePort();
  const configFile = join(dir, 'nginx.conf');
  await writeFile(configFile, nginxConfig(dir, port, replicaPorts));
  const child: ChildProcess = killedOnExit(
    spawn(
      process.env.GENGATE_NGINX ?? 'nginx',
      ['-p', dir, '-e', join(dir, 'error.log'), '-c', configFile, '-g', 'daemon off;'],
      { stdio: 'ignore' },
    ),
    'SIGTERM',
  );
  const exited = once(child, 'exit');
  const url = `http://127.0.0.1:${port}`;
  await waitFor('nginx to listen', async () => {
    if (child.exitCode !== null) throw new Error(`nginx exited with ${child.exitCode}`);
    try {
      await (await fetch(`${url}/healthz-of-nobody`)).arrayBuffer();
      return true;
    } catch {
      return false;
    }
  });
  return {
    url,
    async stop() {
      child.kill('SIGQUIT');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
