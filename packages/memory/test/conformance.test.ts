import { claimStoreSuite } from '@hookgate/store-conformance';
import { MemoryStore } from '../src/index.js';

// One store: every "separate" store of the suite shares its map, as processes share a server.
const store = new MemoryStore();

claimStoreSuite('MemoryStore', () => store);
