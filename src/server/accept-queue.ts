// How many connections on a listening port the process has not accepted yet: completed by the kernel and
// queued. Closing a listening socket resets each of them, and a balancer cannot retry a POST it sent on
// one; the drain closes the listener only when there are none (src/server/draining.ts), and the load
// shedding watches how long they wait (src/overload/queue-wait.ts). Linux shows them as the rx_queue of
// the socket in LISTEN state (0A) in /proc/net/tcp and /proc/net/tcp6; elsewhere the number is unknown.
import { closeSync, openSync, readSync } from 'node:fs';

const LISTEN_STATE = '0A';
const HEX = 16;

// Listening sockets come first in /proc/net/tcp (the kernel lists its listening hash before the
// established one), so a listener's line is within the first few kilobytes however many connections the
// process holds: reading that much is cheap enough to do every few milliseconds.
const LISTENERS_PREFIX_BYTES = 16 * 1024;

/**
 * A reader of how many completed connections wait in the accept queue of the listener on `port` (its
 * rx_queue), from the start of `/proc/net/tcp` (or tcp6): undefined when unknown. `close()` frees it.
 */
export function acceptQueueReader(
  port: number,
  ipv6: boolean,
): { read: () => number | undefined; close: () => void } {
  const portSuffix = `:${port.toString(HEX).toUpperCase().padStart(4, '0')}`;
  const buffer = Buffer.alloc(LISTENERS_PREFIX_BYTES);
  let fd: number | undefined;
  try {
    fd = openSync(ipv6 ? '/proc/net/tcp6' : '/proc/net/tcp', 'r');
  } catch {
    // No /proc (another OS), or no descriptor to spare: the queue stays unknown.
  }
  return {
    read() {
      if (fd === undefined) return undefined;
      // The kernel hands out a page per read.
      let length = 0;
      try {
        for (let read = -1; read !== 0 && length < LISTENERS_PREFIX_BYTES; length += read)
          read = Math.max(0, readSync(fd, buffer, length, LISTENERS_PREFIX_BYTES - length, length));
      } catch {
        return undefined;
      }
      const text = buffer.toString('latin1', 0, length);
      for (const line of text.split('\n')) {
        const [, local, , state, queues] = line.trim().split(/\s+/);
        if (state === LISTEN_STATE && local?.endsWith(portSuffix) === true && queues !== undefined)
          return Number.parseInt(queues.slice(queues.indexOf(':') + 1), HEX);
      }
      return undefined;
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}
