import { redisAdapterSuite } from '@hookgate/redis-harness/adapter-suite';
import { driver } from './clients.js';

redisAdapterSuite('ioredis 5', driver(5));
