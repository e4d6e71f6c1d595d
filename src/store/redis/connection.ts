// The one way gengate connects to Redis. Every option here serves one promise: no command waits on a dead
// or slow Redis longer than `commandTimeoutMs`. Commands fail at once while disconnected (no offline
// queue), are never re-sent after a connection loss (a script that may have run must not run twice), and
// reconnection happens in the background with a capped backoff.
import { readFile } from 'node:fs/promises';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { DEFAULT_REDIS_URL, type GatewayConfig } from '../../config/schema.ts';

export type RedisConnection = Redis | Cluster;

type RedisConfig = GatewayConfig['store']['redis'];

export interface RedisConnectionOptions extends Partial<Pick<RedisConfig, 'url' | 'nodes'>> {
  keyPrefix: string;
  commandTimeoutMs: number;
  /** TLS and authentication for the single Redis or every Cluster node: redisSecurityOptions() builds it. */
  security?: RedisSecurityOptions;
}

/** What the configuration says of TLS and authentication (store.redis); see docs/deploy.md#redis. */
export type RedisSecurityConfig = Pick<RedisConfig, 'username' | 'passwordFile' | 'tls'>;

export type RedisSecurityOptions = Pick<RedisOptions, 'username' | 'password' | 'tls'>;

/**
 * The ioredis options for the configured TLS and password, the files read once (at start-up). A password
 * in a single Redis's URL wins over passwordFile, as ioredis reads the URL first.
 */
export async function redisSecurityOptions(config: RedisSecurityConfig): Promise<RedisSecurityOptions> {
  const options: RedisSecurityOptions = {};
  if (config.username !== undefined) options.username = config.username;
  if (config.passwordFile !== undefined)
    options.password = (await readFile(config.passwordFile, 'utf8')).trim();
  if (config.tls !== undefined) {
    const { caFile, serverName } = config.tls;
    options.tls = {
      ...(caFile === undefined ? {} : { ca: await readFile(caFile, 'utf8') }),
      ...(serverName === undefined ? {} : { servername: serverName }),
    };
  }
  return options;
}

/** The subset of a pino logger the connection needs. */
export interface StoreLogger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

// Connecting is background work (no request waits on it); a generous bound still frees a half-open socket.
const CONNECT_TIMEOUT_MS = 2_000;
const RECONNECT_BASE_DELAY_MS = 50;
const RECONNECT_MAX_DELAY_MS = 2_000;
const SLOTS_REFRESH_TIMEOUT_MS = 1_000;

function reconnectDelayMs(attempt: number): number {
  return Math.min(RECONNECT_BASE_DELAY_MS * 2 ** Math.min(attempt, 16), RECONNECT_MAX_DELAY_MS);
}

/** The URL with its password replaced, fit for a log line. */
function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '<unparsable redis url>';
  }
}

export function createRedisConnection(
  options: RedisConnectionOptions,
  logger?: StoreLogger,
): RedisConnection {
  const perNode = {
    ...options.security,
    commandTimeout: options.commandTimeoutMs,
    connectTimeout: CONNECT_TIMEOUT_MS,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: reconnectDelayMs,
  };
  if (options.nodes !== undefined && options.nodes.length > 0) {
    const cluster = new Cluster(options.nodes, {
      keyPrefix: options.keyPrefix,
      enableOfflineQueue: false,
      // Scripts write, so they must run on masters; reading a replica would also read a stale state.
      scaleReads: 'master',
      clusterRetryStrategy: reconnectDelayMs,
      slotsRefreshTimeout: SLOTS_REFRESH_TIMEOUT_MS,
      redisOptions: perNode,
    });
    logStateChanges(
      cluster,
      `cluster ${options.nodes.map((node) => `${node.host}:${node.port}`).join(',')}`,
      logger,
    );
    return cluster;
  }
  const url = options.url ?? DEFAULT_REDIS_URL;
  // No auto-pipelining: ioredis keeps one auto-pipeline in flight per connection, so a request's command
  // issued meanwhile waits for that batch's round trip before it is even written (docs/performance.md).
  // The store writes the commands of one event-loop turn in one write instead, its socket corked for the
  // turn (send-per-turn.ts).
  const redis = new Redis(url, { ...perNode, keyPrefix: options.keyPrefix });
  logStateChanges(redis, redactRedisUrl(url), logger);
  return redis;
}

// ioredis emits an error for every failed reconnection attempt; an operator needs one line when the
// store goes away and one when it is back, not one per attempt.
function logStateChanges(connection: RedisConnection, target: string, logger: StoreLogger | undefined): void {
  let lastReported: 'ready' | 'failing' | undefined;
  connection.on('ready', () => {
    if (lastReported !== 'ready') logger?.info({ store: target }, 'store connection ready');
    lastReported = 'ready';
  });
  connection.on('error', (error: Error) => {
    if (lastReported !== 'failing')
      logger?.warn({ store: target, err: error.message }, 'store connection failing');
    lastReported = 'failing';
  });
}

/**
 * Resolves once the connection can take commands; rejects after `timeoutMs`. For start-up, not requests.
 * A Cluster is ready before its per-master connections are, and without an offline queue a command to a
 * master still connecting fails, so this also waits for every master.
 */
export async function waitUntilConnected(connection: RedisConnection, timeoutMs: number): Promise<void> {
  await withDeadline(
    (async () => {
      await untilReady(connection);
      if (connection instanceof Cluster) await Promise.all(connection.nodes('master').map(untilReady));
    })(),
    timeoutMs,
  );
}

async function untilReady(connection: RedisConnection): Promise<void> {
  if (connection.status === 'ready') return;
  const ready = new Promise<void>((resolve) => {
    connection.once('ready', () => {
      resolve();
    });
  });
  // Cluster nodes connect lazily, on their first command.
  if (connection.status === 'wait') connection.connect().catch(() => undefined);
  await ready;
}

/**
 * What bounds a command's wait on `connection`. On a single Redis, ioredis's commandTimeout does (no
 * offline queue, no retries: a command fails at once or within it), and a deadline of our own would only
 * add a timer per call. A Cluster may re-send a command after a redirect or CLUSTERDOWN, so there the
 * whole wait gets a deadline, whatever the client does underneath.
 */
export function commandDeadline(
  connection: RedisConnection,
  timeoutMs: number,
): <T>(operation: Promise<T>) => Promise<T> {
  if (connection instanceof Cluster) return (operation) => withDeadline(operation, timeoutMs);
  return (operation) => operation;
}

async function withDeadline<T>(operation: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`store did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([operation, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether `error` is Redis answering with an error: the store is up, the command was refused. */
export function isReplyError(error: unknown): boolean {
  // ioredis types its ReplyError class as any; its name says what it is.
  return error instanceof Error && error.name === 'ReplyError';
}

/**
 * Whether `error` is Redis answering that a key holds another type than the command works on. The store
 * is healthy: that one key is damaged, or was written by something else sharing the key space.
 */
export function isWrongTypeReply(error: unknown): boolean {
  return isReplyError(error) && (error as Error).message.startsWith('WRONGTYPE ');
}
