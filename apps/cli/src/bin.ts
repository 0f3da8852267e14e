#!/usr/bin/env node
import { main } from './main.js';

const code = await main(process.argv.slice(2));
// Give stdout a moment to flush the last replies, but never wait on a client that stopped reading.
const timer = setTimeout(() => process.exit(code), 2_000);
process.stdout.write('', () => {
  clearTimeout(timer);
  process.exit(code);
});
