import { runtimeBinary, serveChild } from './child.js';
import { exactlyOnceOn } from './suite.js';

const ENTRY = `import app from './app.js';
Deno.serve(
  { hostname: '127.0.0.1', port: 0, onListen: ({ port }) => console.log(JSON.stringify({ port })) },
  app.fetch,
);
// Exit with the test process, whose end closes this stdin.
for await (const _ of Deno.stdin.readable);
Deno.exit(0);
`;

exactlyOnceOn(
  'Deno',
  (bundle) =>
    serveChild(
      'deno',
      runtimeBinary('deno'),
      ['run', '--no-config', '--no-lock', '--allow-net=127.0.0.1', bundle.write('deno.js', ENTRY)],
      { cwd: bundle.dir, env: { DENO_DIR: `${bundle.dir}/deno-dir`, DENO_NO_UPDATE_CHECK: '1' } },
    ),
  { nodeCrypto: true },
);
