// A real DNS server on a UDP socket (RFC 1035 wire format, A and AAAA) answering only from the table the
// test gives it: nothing is forwarded, the machine's own resolver is never consulted, and no program
// beyond Node.js is needed (`npm test` asks for nothing but redis-server). setHosts() swaps the table at
// once, so a test can change what a name resolves to between two lookups; rebindAfterFirstAnswer() makes
// a name answer one address to its first A query and another to every later one, the DNS rebinding an
// attacker would try between a sender's check and its connection. Every question is logged in `queries`.
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import ipaddr from 'ipaddr.js';

export type HostTable = Record<string, string[]>;

export interface DnsQuery {
  name: string;
  type: 'A' | 'AAAA' | number;
}

export interface DnsServer {
  /** `<listenAddress>:<port>`, for a resolver's servers. */
  address: string;
  queries: DnsQuery[];
  setHosts(hosts: HostTable): Promise<void>;
  /** `name` answers as the table says to its next A query, and `addresses` from then on. */
  rebindAfterFirstAnswer(name: string, addresses: string[]): void;
  stop(): Promise<void>;
}

const HEADER_BYTES = 12;
const TYPE_A = 1;
const TYPE_AAAA = 28;
const CLASS_IN = 1;
const FLAG_RESPONSE = 0x8000;
const FLAG_AUTHORITATIVE = 0x0400;
const FLAG_RECURSION_DESIRED = 0x0100;
const RCODE_FORMAT_ERROR = 1;
const RCODE_NAME_ERROR = 3;
// A pointer to the question's name, which starts right after the header.
const NAME_POINTER = 0xc000 | HEADER_BYTES;

interface Question {
  name: string;
  type: number;
  /** Where the question ends in the query. */
  end: number;
}

function readQuestion(query: Buffer): Question | undefined {
  if (query.length < HEADER_BYTES || query.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let offset = HEADER_BYTES;
  for (;;) {
    const length = query[offset];
    // No compression in a question; a label is at most 63 bytes.
    if (length === undefined || length > 63) return undefined;
    offset += 1;
    if (length === 0) break;
    labels.push(query.toString('latin1', offset, offset + length));
    offset += length;
  }
  if (offset + 4 > query.length) return undefined;
  return { name: labels.join('.').toLowerCase(), type: query.readUInt16BE(offset), end: offset + 4 };
}

function answerOf(query: Buffer, question: Question | undefined, addresses: string[] | undefined): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt16BE(query.length >= 2 ? query.readUInt16BE(0) : 0, 0);
  const recursion = query.length >= 4 ? query.readUInt16BE(2) & FLAG_RECURSION_DESIRED : 0;
  const rcode = question === undefined ? RCODE_FORMAT_ERROR : addresses === undefined ? RCODE_NAME_ERROR : 0;
  header.writeUInt16BE(FLAG_RESPONSE | FLAG_AUTHORITATIVE | recursion | rcode, 2);
  if (question === undefined) return header;
  const kind = question.type === TYPE_A ? 'ipv4' : question.type === TYPE_AAAA ? 'ipv6' : undefined;
  const records = (addresses ?? [])
    .map((text) => ipaddr.parse(text))
    .filter((address) => address.kind() === kind)
    .map((address) => {
      const data = Buffer.from(address.toByteArray());
      const record = Buffer.alloc(12);
      record.writeUInt16BE(NAME_POINTER, 0);
      record.writeUInt16BE(question.type, 2);
      record.writeUInt16BE(CLASS_IN, 4);
      // TTL 0: nothing may cache an answer the test is about to change.
      record.writeUInt32BE(0, 6);
      record.writeUInt16BE(data.length, 10);
      return Buffer.concat([record, data]);
    });
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(records.length, 6);
  return Buffer.concat([header, query.subarray(HEADER_BYTES, question.end), ...records]);
}

export async function startDnsServer(
  hosts: HostTable,
  listenAddress = '127.0.0.1',
  port = 0,
): Promise<DnsServer> {
  let table = new Map(Object.entries(hosts).map(([name, addresses]) => [name.toLowerCase(), addresses]));
  const rebinds = new Map<string, string[]>();
  const queries: DnsQuery[] = [];
  const socket = createSocket(ipaddr.parse(listenAddress).kind() === 'ipv6' ? 'udp6' : 'udp4');
  socket.on('message', (query, peer) => {
    const question = readQuestion(query);
    if (question !== undefined) {
      const type = question.type === TYPE_A ? 'A' : question.type === TYPE_AAAA ? 'AAAA' : question.type;
      queries.push({ name: question.name, type });
    }
    const addresses = question === undefined ? undefined : table.get(question.name);
    socket.send(answerOf(query, question, addresses), peer.port, peer.address);
    const rebound = question?.type === TYPE_A ? rebinds.get(question.name) : undefined;
    if (question !== undefined && rebound !== undefined) {
      rebinds.delete(question.name);
      table = new Map(table).set(question.name, rebound);
    }
  });
  socket.bind(port, listenAddress);
  await once(socket, 'listening');
  const bound = socket.address();
  return {
    address: bound.family === 'IPv6' ? `[${listenAddress}]:${bound.port}` : `${listenAddress}:${bound.port}`,
    queries,
    setHosts(next) {
      table = new Map(Object.entries(next).map(([name, addresses]) => [name.toLowerCase(), addresses]));
      rebinds.clear();
      return Promise.resolve();
    },
    rebindAfterFirstAnswer(name, addresses) {
      rebinds.set(name.toLowerCase(), addresses);
    },
    async stop() {
      socket.close();
      await once(socket, 'close');
    },
  };
}
