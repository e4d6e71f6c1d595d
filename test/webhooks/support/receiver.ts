// A real webhook receiver on a socket: it records every connection and every request (headers and raw
// body), and answers what the test says. Connections are counted at the TCP level, so "never connected
// to" is checked on the receiver's side, not only from the sender's report.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedRequest {
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Answers one request; the default answers 204. Returning without ending leaves the request hanging. */
export type Answer = (request: ReceivedRequest, response: ServerResponse) => void;

export interface Receiver {
  host: string;
  port: number;
  /** `http://<host>:<port>` (IPv6 hosts bracketed). */
  origin: string;
  connections: number;
  requests: ReceivedRequest[];
  answer: Answer;
  close(): Promise<void>;
}

export const answerStatus =
  (status: number, headers: Record<string, string> = {}): Answer =>
  (_request, response) => {
    response.writeHead(status, headers).end();
  };

export async function startReceiver(
  host = '127.0.0.1',
  answer: Answer = answerStatus(204),
  port = 0,
): Promise<Receiver> {
  const server = createServer();
  const receiver: Receiver = {
    host,
    port: 0,
    origin: '',
    connections: 0,
    requests: [],
    answer,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
  server.on('connection', () => {
    receiver.connections += 1;
  });
  server.on('request', (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const received = {
        url: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      receiver.requests.push(received);
      receiver.answer(received, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.origin = `http://${host.includes(':') ? `[${host}]` : host}:${receiver.port}`;
  return receiver;
}

/** Whether a request's Standard Webhooks signature verifies with `secret`, by the `standardwebhooks` library. */
export function verifiesWith(secret: string, request: ReceivedRequest): boolean {
  try {
    new Webhook(secret).verify(request.body, {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    });
    return true;
  } catch {
    return false;
  }
}
