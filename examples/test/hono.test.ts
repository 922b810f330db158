import { describeExample } from './example-harness.js';

describeExample('examples/hono/server.ts', 'examples/hono/server.ts');
