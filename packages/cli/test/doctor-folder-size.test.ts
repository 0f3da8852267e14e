import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { folderUsage } from '../src/doctor/system.js';

const dir = mkdtempSync(join(tmpdir(), 'mcpsandbox-doctor-size-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A uv or npm cache can hold millions of files: doctor counts a bounded part and says so.
describe("doctor's folder size", () => {
  const tree = join(dir, 'cache');
  mkdirSync(join(tree, 'a', 'b'), { recursive: true });
  for (let i = 0; i < 40; i++) writeFileSync(join(tree, 'a', 'b', `f${i}`), 'x'.repeat(100));
  writeFileSync(join(tree, 'top'), 'y'.repeat(10));
  // A link out of the tree is never followed (it would count, or loop on, what it names).
  symlinkSync('/', join(tree, 'a', 'root-link'));

  it('counts a whole small tree', async () => {
    expect(await folderUsage(tree)).toEqual({ bytes: 4010, entries: 2, partial: false });
  });

  it('stops after its file budget and says the count is partial', async () => {
    const usage = await folderUsage(tree, { maxFiles: 10, maxMs: 60_000 });
    expect(usage?.partial).toBe(true);
    expect(usage?.bytes).toBeLessThan(4010);
  });

  it('stops at its time budget', async () => {
    const usage = await folderUsage(tree, { maxFiles: 1_000_000, maxMs: 0 });
    expect(usage?.partial).toBe(true);
  });

  it('is undefined for a folder that does not exist', async () => {
    expect(await folderUsage(join(dir, 'none'))).toBeUndefined();
  });
});
