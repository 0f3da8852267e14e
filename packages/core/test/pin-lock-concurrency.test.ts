/**
 * The pin lock under concurrent first starts (issue 30, finding 6): each start is a process of
 * its own pinning one package against a registry on loopback, which holds every answer until all
 * the starts have asked, so that they all change the lock at once. However many starts and
 * packages, every package is pinned exactly once: none is lost to another start's rename.
 * The starts run the built package (dist), as the binary does.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { SEED } from './property.js';

/** The built core the starts load (`PIN_TEST_CORE`: another build of it, to compare). */
const CORE = process.env.PIN_TEST_CORE ?? fileURLToPath(new URL('../dist/index.js', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'mcpsandbox-pin-race-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const integrityOf = (name: string) => `sha512-${createHash('sha512').update(name).digest('base64')}`;

/** A registry that answers no packument until `expected` requests wait (or 10 s passed). */
async function barrierRegistry(expected: number) {
  const waiting: Array<{ name: string; response: ServerResponse }> = [];
  const answer = ({ name, response }: { name: string; response: ServerResponse }) => {
    response.setHeader('content-type', 'application/json');
    response.end(
      JSON.stringify({
        name,
        'dist-tags': { latest: '1.0.0' },
        versions: { '1.0.0': { name, version: '1.0.0', dist: { integrity: integrityOf(name) } } },
      }),
    );
  };
  const release = () => {
    for (const entry of waiting.splice(0)) answer(entry);
  };
  const timer = setTimeout(release, 10_000);
  const server = createServer((request, response) => {
    const name = decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname.slice(1));
    waiting.push({ name, response });
    if (waiting.length >= expected) release();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () => {
      clearTimeout(timer);
      release();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One start: a process that pins `spec` and prints what it got. */
function start(
  spec: string,
  registry: string,
  lockFile: string,
): Promise<{ code: number | null; out: string }> {
  const program = `
    const { pinNpxSpec } = await import(${JSON.stringify(CORE)});
    const got = await pinNpxSpec(process.argv[1], { registry: process.argv[2], lockFile: process.argv[3] });
    process.stdout.write(got);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', program, spec, registry, lockFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out })));
}

let round = 0;

describe(`the pin lock under concurrent first starts (seed ${SEED})`, () => {
  it('N concurrent first starts of M packages leave exactly M pins', { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 4 }),
        async (packages, extra) => {
          const names = Array.from({ length: packages }, (_, i) => `race-pkg-${i}`);
          // Every package at least once, some twice: N = M + extra starts.
          const specs = [...names, ...Array.from({ length: extra }, (_, i) => names[i % packages] as string)];
          const dir = mkdtempSync(join(work, `round-${++round}-`));
          const lockFile = join(dir, 'npx-lock.json');
          const registry = await barrierRegistry(specs.length);
          try {
            const results = await Promise.all(specs.map((spec) => start(spec, registry.url, lockFile)));
            for (const [i, result] of results.entries()) {
              expect(result, `start ${i}`).toEqual({ code: 0, out: `${specs[i]}@1.0.0` });
            }
            const lock = JSON.parse(readFileSync(lockFile, 'utf8')) as {
              pins: Array<{ name: string; integrity: string }>;
            };
            expect(lock.pins.map((pin) => pin.name).sort()).toEqual(names);
            for (const pin of lock.pins) expect(pin.integrity).toBe(integrityOf(pin.name));
            // Nothing of the mutex or a temporary file is left beside the lock.
            expect(readdirSync(dir)).toEqual(['npx-lock.json']);
          } finally {
            await registry.close();
          }
        },
      ),
      { seed: SEED, numRuns: Number(process.env.FC_RUNS ?? 6) },
    );
  });
});
