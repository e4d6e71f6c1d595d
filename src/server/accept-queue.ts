// How many connections the kernel has completed on a listening port that the process has not accepted
// yet. Closing a listening socket resets each of them, and a client may already have sent its request on
// one (a balancer's POST it cannot retry); the drain closes the listener only when there are none
// (src/server/draining.ts). Linux shows the number as the rx_queue of the socket in LISTEN state (0A) in
// /proc/net/tcp and /proc/net/tcp6; elsewhere it is unknown.
import { readFileSync } from 'node:fs';

const TCP_TABLES = ['/proc/net/tcp', '/proc/net/tcp6'];
const LISTEN_STATE = '0A';
const HEX = 16;

/** The connections waiting in the accept queue of `port`'s listening sockets, or undefined when unknown. */
export function connectionsAwaitingAccept(port: number): number | undefined {
  const portSuffix = `:${port.toString(HEX).toUpperCase().padStart(4, '0')}`;
  let waiting: number | undefined;
  for (const table of TCP_TABLES) {
    let text: string;
    try {
      text = readFileSync(table, 'latin1');
    } catch {
      // No /proc (another OS), no IPv6, or no descriptor to spare to read it.
      continue;
    }
    waiting ??= 0;
    for (const line of text.split('\n')) {
      // sl local_address rem_address st tx_queue:rx_queue ...
      const [, local, , state, queues] = line.trim().split(/\s+/);
      if (state !== LISTEN_STATE || local?.endsWith(portSuffix) !== true || queues === undefined) continue;
      waiting += Number.parseInt(queues.slice(queues.indexOf(':') + 1), HEX);
    }
  }
  return waiting;
}
