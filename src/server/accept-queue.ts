// How many connections on a listening port the process has not accepted yet: completed by the kernel
// and queued, or half-open (SYN received, answered, the client's ACK dropped because the queue was
// full: the client believes it is connected and may already have sent its request). Closing a listening
// socket resets each of them, and a balancer cannot retry a POST it sent on one; the drain closes the
// listener only when there are none (src/server/draining.ts). Linux shows the queued ones as the
// rx_queue of the socket in LISTEN state (0A) and the half-open ones as sockets in SYN_RECV state (03)
// on that local port, in /proc/net/tcp and /proc/net/tcp6; elsewhere the number is unknown.
import { readFileSync } from 'node:fs';

const TCP_TABLES = ['/proc/net/tcp', '/proc/net/tcp6'];
const LISTEN_STATE = '0A';
const SYN_RECV_STATE = '03';
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
      if (local?.endsWith(portSuffix) !== true || queues === undefined) continue;
      if (state === SYN_RECV_STATE) waiting += 1;
      else if (state === LISTEN_STATE) waiting += Number.parseInt(queues.slice(queues.indexOf(':') + 1), HEX);
    }
  }
  return waiting;
}
