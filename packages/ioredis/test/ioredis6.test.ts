import { redisAdapterSuite } from '@hookgate/redis-harness/adapter-suite';
import { driver } from './clients.js';

redisAdapterSuite('ioredis 6', driver(6));
