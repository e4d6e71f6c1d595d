// One connection driven byte for byte, for the hostile-client suites: whatever was written (several
// pipelined requests, broken framing) goes out in one write, and every response the gateway sends on
// that connection is read back, in order, together with whether the gateway closed the connection.
import { connect, type Socket } from 'node:net';

export interface RawAnswer {
  status: number;
  /** Header names in lower case; a repeated field keeps its last value. */
  headers: Record<string, string>;
  body: string;
}

export interface RawExchange {
  answers: RawAnswer[];
  /** Whether the gateway closed the connection (rather than the test, after the answers it awaited). */
  closedByGateway: boolean;
}

const HEAD_END = '\r\n\r\n';
const DEFAULT_TIMEOUT_MS = 10_000;

/** Every whole response at the start of `bytes` (the gateway always sends a Content-Length). */
function parseAnswers(bytes: Buffer): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let offset = 0;
  for (;;) {
    const headEnd = bytes.indexOf(HEAD_END, offset, 'latin1');
    if (headEnd === -1) return answers;
    const [statusLine = '', ...lines] = bytes.toString('latin1', offset, headEnd).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    const bodyStart = headEnd + HEAD_END.length;
    const bodyEnd = bodyStart + Number(headers['content-length'] ?? 0);
    if (bodyEnd > bytes.length) return answers;
    answers.push({
      status: Number(statusLine.split(' ')[1]),
      headers,
      body: bytes.toString('utf8', bodyStart, bodyEnd),
    });
    offset = bodyEnd;
  }
}

export interface ExchangeOptions {
  /**
   * Stop once this many answers arrived, closing the connection from the test's side (for a gateway
   * expected to keep it open). Without it, the exchange waits for the gateway to close the connection.
   */
  answers?: number;
  timeoutMs?: number;
}

/** Writes `bytes` on a fresh connection to `baseUrl` and reads back what the gateway answers. */
export function exchangeRaw(
  baseUrl: string,
  bytes: string | Buffer,
  options: ExchangeOptions = {},
): Promise<RawExchange> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      const got = parseAnswers(received).length;
      reject(
        new Error(
          `no end to the exchange after ${options.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms (${got} answers)`,
        ),
      );
    }, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const answers = parseAnswers(received);
      if (options.answers === undefined || answers.length < options.answers) return;
      clearTimeout(timer);
      socket.removeAllListeners('close');
      socket.destroy();
      resolve({ answers, closedByGateway: false });
    });
    socket.on('error', () => {
      // A reset after the gateway's answer still ends the exchange, through 'close'.
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ answers: parseAnswers(received), closedByGateway: true });
    });
    socket.write(bytes);
  });
}
