import { claimStoreSuite } from '@hookgate/store-conformance';
import { vi } from 'vitest';
import { MemoryStore } from '../src/index.js';

// The suite's TTL and error tests mostly wait: let them all wait at once.
vi.setConfig({ maxConcurrency: 20 });

// One store: every "separate" store of the suite shares its map, as processes share a server.
const store = new MemoryStore();

claimStoreSuite('MemoryStore', () => store);
