import { redisAdapterSuite } from '@hookgate/redis-harness/adapter-suite';
import { driver } from './clients.js';

redisAdapterSuite('redis 6', driver(6));
