// An upstream that lies: a real HTTP server in front of the simulator that passes every exchange through
// unchanged unless a twist is set, and then changes the simulator's answer the way a broken or hostile
// upstream (or something between gengate and it) would: HTML in place of JSON, a record of another job,
// cache directives and validators, an absurd Retry-After, a refused credential, a body that never ends.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback } from './free-port.ts';

export interface UpstreamAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Sends `body` and then this chunk again and again, for as long as the connection stays open. */
  endlessChunk?: Buffer;
}

/** Writes `chunk` whenever the socket takes more, until the connection closes. */
function writeForever(response: ServerResponse, chunk: Buffer): void {
  const more = () => {
    while (!response.destroyed && response.write(chunk));
  };
  response.on('drain', more);
  more();
}

/** Turns the simulator's answer to `request` into the one sent to gengate. */
export type Twist = (answer: UpstreamAnswer, request: { method: string; url: string }) => UpstreamAnswer;

export interface MisbehavingUpstream {
  url: string;
  /** Applies `twist` to every following answer whose request matches, until cleared. */
  twist(twist: Twist | undefined, match?: { method?: string; pathPrefix?: string }): void;
  close(): Promise<void>;
}

const PASSED_REQUEST_HEADERS = ['authorization', 'accept', 'user-agent', 'x-request-id', 'content-type'];

function requestHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const passed: Record<string, string> = {};
  for (const name of PASSED_REQUEST_HEADERS) {
    const value = headers[name];
    if (typeof value === 'string') passed[name] = value;
  }
  return passed;
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startMisbehavingUpstream(simulatorUrl: string): Promise<MisbehavingUpstream> {
  let active: { twist: Twist; method?: string; pathPrefix?: string } | undefined;
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    void (async () => {
      const method = request.method ?? 'GET';
      const url = request.url ?? '/';
      const body = await readBody(request);
      const passed = await fetch(`${simulatorUrl}${url}`, {
        method,
        headers: requestHeaders(request.headers),
        ...(body.length === 0 ? {} : { body }),
      });
      let answer: UpstreamAnswer = {
        status: passed.status,
        headers: Object.fromEntries(
          [...passed.headers].filter(([name]) => name !== 'content-length' && name !== 'transfer-encoding'),
        ),
        body: await passed.text(),
      };
      const twist = active;
      const matches =
        twist !== undefined &&
        (twist.method === undefined || twist.method === method) &&
        (twist.pathPrefix === undefined || url.startsWith(twist.pathPrefix));
      if (matches) answer = twist.twist(answer, { method, url });
      response.writeHead(answer.status, answer.headers);
      if (answer.endlessChunk === undefined) response.end(answer.body);
      else {
        response.write(answer.body);
        writeForever(response, answer.endlessChunk);
      }
    })().catch((error: unknown) => {
      response.destroy(error instanceof Error ? error : new Error(String(error)));
    });
  });
  const { port, closeAll } = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    twist(twist, match = {}) {
      active = twist === undefined ? undefined : { twist, ...match };
    },
    close: closeAll,
  };
}
