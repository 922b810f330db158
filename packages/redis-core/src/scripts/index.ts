import { createHash } from 'node:crypto';
import advance from './advance-1.js';
import done from './done-1.js';
import extend from './extend-1.js';
import extendHold from './extend-hold-1.js';
import forget from './forget-1.js';
import inspect from './inspect-1.js';
import release from './release-1.js';
import releaseHold from './release-hold-1.js';

/** A Lua script and its SHA1, the name `EVALSHA` knows it by. */
export interface Script {
  readonly lua: string;
  readonly sha: string;
}

function script(lua: string): Script {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

/**
 * The owner-checked operations: Redis 7.0 has no `SET … IFEQ`, so each compare-and-set is a
 * script. Each takes one key (cluster-safe) and returns an integer, which reads the same under
 * RESP2 and RESP3 (Lua `true`/`false` would not); -1 always means "a value hookgate did not
 * write is there, and was left alone". `inspect` alone returns the value and its TTL.
 */
export const scripts = {
  done: script(done),
  release: script(release),
  extend: script(extend),
  advance: script(advance),
  releaseHold: script(releaseHold),
  extendHold: script(extendHold),
  inspect: script(inspect),
  forget: script(forget),
} as const;
