import type * as redis5 from 'redis5';
import type * as redis6 from 'redis6';
import { describe, expectTypeOf, it } from 'vitest';
import { type NodeRedisClient, NodeRedisStore } from '../src/index.js';

describe('types', () => {
  it('takes node-redis 5 and 6 clients and clusters, RESP2 and RESP3, as they come', () => {
    expectTypeOf<ReturnType<typeof redis5.createClient>>().toExtend<NodeRedisClient>();
    expectTypeOf<ReturnType<typeof redis6.createClient>>().toExtend<NodeRedisClient>();
    expectTypeOf<ReturnType<typeof redis5.createCluster>>().toExtend<NodeRedisClient>();
    expectTypeOf<ReturnType<typeof redis6.createCluster>>().toExtend<NodeRedisClient>();
    type Resp3 = redis6.RedisClientType<
      redis6.RedisDefaultModules,
      Record<string, never>,
      Record<string, never>,
      3
    >;
    expectTypeOf<Resp3>().toExtend<NodeRedisClient>();
    expectTypeOf(NodeRedisStore).constructorParameters.toEqualTypeOf<
      [client: NodeRedisClient, options?: import('../src/index.js').NodeRedisStoreOptions]
    >();
  });
});
