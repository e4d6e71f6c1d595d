// What makes a store Redis URL one ioredis can use, beyond the redis:// or rediss:// scheme the schema
// asks for. ioredis reads the URL only when the store opens: a port past 65535 then throws `Invalid URL`,
// and a database that is not a number turns every connection's first command into `select NaN`.
// Reasons quote no part of the URL: it may hold the Redis password, and a password with an unescaped `/`
// would be read as host, port and path.

// The port as written. The URL parser refuses one past 65535 without saying why, so it is read first.
const WRITTEN_PORT = /^rediss?:\/\/(?:[^/?#]*@)?(?:\[[^\]/?#]*\]|[^:/?#]*):(\d+)(?:[/?#]|$)/;
const HIGHEST_PORT = 65_535;
// No path, `/`, or `/` and the database number.
const DATABASE_PATH = /^(\/\d*)?$/;

/** Why ioredis cannot use `url`, a redis:// or rediss:// URL, or undefined when it can. */
export function redisUrlProblem(url: string): string | undefined {
  const port = WRITTEN_PORT.exec(url)?.[1];
  if (port !== undefined && (Number(port) < 1 || Number(port) > HIGHEST_PORT)) {
    return `the port must be from 1 to ${HIGHEST_PORT}`;
  }
  if (!URL.canParse(url)) return 'must be a valid URL';
  const { pathname } = new URL(url);
  if (!DATABASE_PATH.test(pathname)) {
    return 'the database, the path after the host, must be a non-negative integer';
  }
  return undefined;
}
