// Sends a request head and only part of its body, then reads the response without ever finishing the
// upload: an answer that arrives proves the gateway decided before the whole body was read.
import { connect } from 'node:net';

export interface EarlyResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const HEAD_END = '\r\n\r\n';

function completeResponse(bytes: Buffer): EarlyResponse | undefined {
  const text = bytes.toString('latin1');
  const headEnd = text.indexOf(HEAD_END);
  if (headEnd === -1) return undefined;
  const [statusLine = '', ...headerLines] = text.slice(0, headEnd).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const body = bytes.subarray(headEnd + HEAD_END.length);
  if (body.length < Number(headers['content-length'] ?? 0)) return undefined;
  return { status: Number(statusLine.split(' ')[1]), headers, body: body.toString('utf8') };
}

export function answerToUnfinishedUpload(
  baseUrl: string,
  target: string,
  headers: Record<string, string>,
  bodyStart: string,
): Promise<EarlyResponse> {
  const { hostname, port } = new URL(baseUrl);
  const head = [`POST ${target} HTTP/1.1`, `Host: ${hostname}:${port}`];
  for (const [name, value] of Object.entries(headers)) head.push(`${name}: ${value}`);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const response = completeResponse(received);
      if (response === undefined) return;
      socket.destroy();
      resolve(response);
    });
    socket.on('error', reject);
    socket.on('close', () => {
      reject(new Error('the connection closed before a whole response arrived'));
    });
    socket.write(`${head.join('\r\n')}${HEAD_END}${bodyStart}`);
  });
}
