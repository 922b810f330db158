#!/usr/bin/env node
import { main } from './main.js';

const code = await main(process.argv.slice(2));
process.exitCode = code;
// Everything is closed by now; should a socket still hold the event loop, do not hang on it.
setTimeout(() => process.exit(code), 1_000).unref();
