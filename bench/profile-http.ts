/**
 * `pnpm bench:profile-http <express|koa|hono|fastify> [rounds]`: where one binding's server CPU goes, per
 * request, against the same route by hand (the HTTP rows of `pnpm bench`).
 *
 * One server process runs under `--cpu-prof` while autocannon alternates the two routes in 1 s
 * rounds (`rounds` of each, default 6, ABBA order). Each CPU sample counts for the route whose
 * round it fell in, so the two routes are profiled under the same conditions, in one profile:
 * profiling each route alone in its own run left the difference between runs (up to 2x here) in
 * the comparison. Prints the requests and server CPU per request of each route, then µs per
 * request by category (the kernel's socket writes, GC, each hookgate package, each framework
 * package) and by function, largest difference first.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis } from '@hookgate/redis-harness';
import { askServer, loadRoute, startServer } from './src/http.js';

const ROUTES = ['/hookgate', '/baseline'] as const;
type Route = (typeof ROUTES)[number];

interface Window {
  route: Route;
  /** On the server's monotonic clock, in µs, as the profile's samples are. */
  start: number;
  end: number;
  requests: number;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const [framework = '', roundsArg = '6'] = process.argv.slice(2);
const rounds = Number(roundsArg);
if (
  !['express', 'koa', 'hono', 'fastify'].includes(framework) ||
  !Number.isSafeInteger(rounds) ||
  rounds < 1
) {
  console.error('usage: pnpm bench:profile-http <express|koa|hono|fastify> [rounds, default 6]');
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), 'hookgate-profile-'));
const redis = await startRedis();
const windows: Window[] = [];
try {
  const server = await startServer(framework, redis.port, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  const clock = () => askServer<number>(server.child, 'clock');
  // Warm-up: JIT, connection pools, the Redis script cache.
  for (const route of ROUTES) await loadRoute(server.port, route, 1);
  for (let round = 0; round < rounds; round++) {
    for (const route of round % 2 === 0 ? ROUTES : [...ROUTES].reverse()) {
      const start = await clock();
      const result = await loadRoute(server.port, route, 1);
      windows.push({ route, start, end: await clock(), requests: result.requests.total });
    }
  }
  // The profile is written as the server exits.
  server.child.disconnect();
  await new Promise((resolve) => server.child.once('exit', resolve));
  report(readProfile(dir), windows);
} finally {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}

/** The main thread's profile: the largest file (tsx's loader thread writes one too). */
function readProfile(from: string): Profile {
  const [largest] = readdirSync(from)
    .filter((file) => file.endsWith('.cpuprofile'))
    .map((file) => join(from, file))
    .map((file) => ({ file, text: readFileSync(file, 'utf8') }))
    .sort((a, b) => b.text.length - a.text.length);
  if (largest === undefined) throw new Error('the server wrote no profile');
  return JSON.parse(largest.text) as Profile;
}

function category({ functionName, url }: ProfileNode['callFrame']): string {
  if (url === '') return functionName.startsWith('(') ? functionName : `native ${functionName}`;
  const hookgate = /\/packages\/([^/]+)\//.exec(url);
  if (hookgate) return `@hookgate/${hookgate[1]}`;
  const module = /.*node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (module) return module[1]!;
  if (url.startsWith('node:')) return url;
  return 'bench/src/http-server.ts';
}

function place({ functionName, url, lineNumber }: ProfileNode['callFrame']): string {
  const file = url.replace(/.*node_modules\//, '').replace(/.*\/packages\//, '@hookgate/');
  return `${functionName || '(anonymous)'} ${file}${url ? `:${lineNumber + 1}` : ''}`;
}

function report(profile: Profile, loads: Window[]): void {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const requests = { '/hookgate': 0, '/baseline': 0 };
  for (const w of loads) requests[w.route] += w.requests;
  const byCategory = { '/hookgate': new Map<string, number>(), '/baseline': new Map() };
  const byPlace = { '/hookgate': new Map<string, number>(), '/baseline': new Map() };
  let time = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    time += profile.timeDeltas[i]!;
    const frame = nodes.get(profile.samples[i]!)!.callFrame;
    if (frame.functionName === '(idle)') continue;
    const round = loads.find((w) => time >= w.start && time < w.end);
    if (round === undefined) continue;
    // A sample stands for the time until the next one.
    const us = profile.timeDeltas[i + 1] ?? 0;
    const add = (into: Map<string, number>, key: string) =>
      into.set(key, (into.get(key) ?? 0) + us);
    add(byCategory[round.route], category(frame));
    add(byPlace[round.route], place(frame));
  }
  const perRequest = (route: Route, sum: number) => sum / requests[route];
  const total = (route: Route) =>
    perRequest(
      route,
      [...byCategory[route].values()].reduce((a, b) => a + b, 0),
    );
  console.log(
    `${framework}, ${loads.length / 2} rounds of 1 s per route: ` +
      `/hookgate ${requests['/hookgate']} requests, ${total('/hookgate').toFixed(1)} µs of server CPU each; ` +
      `/baseline ${requests['/baseline']} requests, ${total('/baseline').toFixed(1)} µs each ` +
      `(requests ${(requests['/hookgate'] / requests['/baseline']).toFixed(3)}x)`,
  );
  for (const [title, table, top] of [
    ['by category', byCategory, 20],
    ['by function', byPlace, 25],
  ] as const) {
    console.log(`\nµs per request ${title}, largest difference first:`);
    console.log('hookgate baseline  difference');
    const keys = new Set([...table['/hookgate'].keys(), ...table['/baseline'].keys()]);
    const rows = [...keys].map((key) => {
      const h = perRequest('/hookgate', table['/hookgate'].get(key) ?? 0);
      const b = perRequest('/baseline', table['/baseline'].get(key) ?? 0);
      return { key, h, b };
    });
    rows.sort((x, y) => Math.abs(y.h - y.b) - Math.abs(x.h - x.b));
    for (const { key, h, b } of rows.slice(0, top)) {
      const cell = (n: number, width: number) => n.toFixed(2).padStart(width);
      console.log(`${cell(h, 8)} ${cell(b, 8)} ${cell(h - b, 11)}  ${key}`);
    }
  }
}
