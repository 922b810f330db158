import { runtimeBinary, serveChild } from './child.js';
import { exactlyOnceOn } from './suite.js';

const ENTRY = `import app from './app.js';
const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: app.fetch });
console.log(JSON.stringify({ port: server.port }));
// Exit with the test process, whose end closes this stdin.
process.stdin.on('end', () => process.exit(0)).resume();
`;

exactlyOnceOn(
  'Bun',
  (bundle) =>
    serveChild('bun', runtimeBinary('bun'), [bundle.write('bun.js', ENTRY)], {
      cwd: bundle.dir,
      env: { DO_NOT_TRACK: '1', BUN_RUNTIME_TRANSPILER_CACHE_PATH: '0' },
    }),
  { nodeCrypto: true },
);
