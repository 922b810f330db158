import { readFileSync } from 'node:fs';
import { Miniflare } from 'miniflare';
import type { Bundle } from './bundle.js';
import { exactlyOnceOn, type Served } from './suite.js';

/** The bundle as a module worker in workerd, through Miniflare (on a loopback port of its own). */
async function worker(bundle: Bundle, compatibilityFlags: string[]): Promise<Served> {
  const mf = new Miniflare({
    modules: true,
    script: readFileSync(bundle.file, 'utf8'),
    compatibilityDate: '2026-04-20',
    compatibilityFlags,
  });
  await mf.ready;
  return {
    request: (path, init) => mf.dispatchFetch(new URL(path, 'http://worker.test'), init),
    close: () => mf.dispose(),
  };
}

// Without `nodejs_compat` workerd has no `process`, so core's portable SHA-256 runs.
exactlyOnceOn('workerd (Miniflare)', (bundle) => worker(bundle, []), { nodeCrypto: false });

// With it (as most Workers are deployed), `process.getBuiltinModule('node:crypto')` answers.
exactlyOnceOn('workerd with nodejs_compat', (bundle) => worker(bundle, ['nodejs_compat']), {
  nodeCrypto: true,
});
