import { describeExample } from './example-harness.js';

describeExample('examples/express/server.ts', 'examples/express/server.ts');
