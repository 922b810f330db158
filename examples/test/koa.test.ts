import { describeExample } from './example-harness.js';

describeExample('examples/koa/server.ts', 'examples/koa/server.ts');
