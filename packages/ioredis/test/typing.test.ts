import type * as ioredis5 from 'ioredis5';
import type * as ioredis6 from 'ioredis6';
import { describe, expectTypeOf, it } from 'vitest';
import type { IoRedisClient, IoRedisStoreOptions } from '../src/index.js';
import { IoRedisStore } from '../src/index.js';

describe('types', () => {
  it('takes ioredis 5 and 6 Redis and Cluster clients as they come', () => {
    expectTypeOf<ioredis5.Redis>().toExtend<IoRedisClient>();
    expectTypeOf<ioredis6.Redis>().toExtend<IoRedisClient>();
    expectTypeOf<ioredis5.Cluster>().toExtend<IoRedisClient>();
    expectTypeOf<ioredis6.Cluster>().toExtend<IoRedisClient>();
    expectTypeOf(IoRedisStore).constructorParameters.toEqualTypeOf<
      [client: IoRedisClient, options?: IoRedisStoreOptions]
    >();
  });
});
