// Store commands issued during one turn of the event loop leave in one socket write.
//
// Under load the gateway sends several commands per turn (a request's admission, the record of another
// request's answer, the usage meter), and ioredis writes each one at once: a system call apiece, which
// was the largest single cost of a request in the CPU profile (docs/performance.md). Corking the socket at
// the first command of a turn and uncorking it in that turn's check phase (setImmediate, right after the
// poll phase has handed over every request that was ready) sends them together, without waiting for any
// earlier reply: unlike ioredis's auto-pipelining, which holds new commands back while a batch is in flight.
// Nothing is lost at shutdown: closing the connection ends the socket, and ending a stream uncorks it.
import type { Redis } from 'ioredis';
import type { Writable } from 'node:stream';

export function coalesceWrites(redis: Redis): void {
  const sendCommand = redis.sendCommand.bind(redis);
  let corked: Writable | undefined;
  const uncork = (): void => {
    // The socket corked, even if a reconnection has replaced it since.
    corked?.uncork();
    corked = undefined;
  };
  redis.sendCommand = (command, stream) => {
    // Before 'ready' ioredis writes its own handshake (and without an offline queue refuses the rest).
    if (corked === undefined && redis.status === 'ready') {
      corked = redis.stream;
      corked.cork();
      setImmediate(uncork);
    }
    return sendCommand(command, stream);
  };
}
