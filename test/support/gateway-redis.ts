// A Redis of the test file's own for tests that drive the store modules directly: started before the
// file's tests, with the connection the gateway would make to it and a plain client for reading and
// planting keys; stopped after them.
import type { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import type { RedisConnection } from '../../src/store/redis/connection.ts';
import { connectAsGateway, startRedisServer, type RedisServer } from './redis-server.ts';

export interface GatewayRedis {
  /** Connected as the gateway connects (its key prefix). */
  connection: RedisConnection;
  /** Without the key prefix: keys read in full, e.g. `gengate:request:<id>`. */
  inspector: Redis;
}

/** Registers the file's beforeAll and afterAll; the fields are set once beforeAll has run. */
export function useGatewayRedis(): GatewayRedis {
  let redis: RedisServer | undefined;
  const gatewayRedis = {} as GatewayRedis;
  beforeAll(async () => {
    redis = await startRedisServer();
    gatewayRedis.connection = await connectAsGateway(redis);
    gatewayRedis.inspector = redis.client();
  });
  afterAll(async () => {
    gatewayRedis.connection.disconnect();
    await redis?.stop();
  });
  return gatewayRedis;
}
