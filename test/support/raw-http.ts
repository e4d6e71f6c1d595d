// Sends a request exactly as written, byte for byte: fetch and undici normalise request targets
// (dot segments, encodings), which would hide the very tricks the allowlist tests send. The answer is
// searched by the secret canary, as fetched answers are (secret-canary-setup.ts).
import { connect } from 'node:net';
import { searchProduced } from './secret-canary.ts';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export async function sendRaw(
  baseUrl: string,
  method: string,
  target: string,
  headers: Record<string, string> = {},
  body = '',
): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  const lines = [`${method} ${target} HTTP/1.1`, `Host: ${hostname}:${port}`, 'Connection: close'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  const socket = connect(Number(port), hostname);
  socket.write(`${lines.join('\r\n')}\r\n\r\n${body}`);
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  const answer = Buffer.concat(chunks);
  searchProduced(`the answer to ${method} ${target} (raw)`, answer);
  const text = answer.toString('utf8');
  const [head = '', ...rest] = text.split('\r\n\r\n');
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  const parsedHeaders: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    parsedHeaders[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers: parsedHeaders, body: rest.join('\r\n\r\n') };
}
