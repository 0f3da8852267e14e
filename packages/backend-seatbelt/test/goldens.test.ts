import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generateProfile } from '../src/profile/generate.js';
import { parseProfile } from '../src/sbpl/evaluate.js';
import { type PlanName, plans } from './plans.js';

const goldenPath = (name: PlanName) => new URL(`golden/${name}.sb`, import.meta.url);

describe('the generated Seatbelt profile for each kind of session', () => {
  for (const name of Object.keys(plans) as PlanName[]) {
    it(`${name} matches test/golden/${name}.sb`, () => {
      const profile = generateProfile(plans[name]);
      // Always a profile the evaluator (and so the decision tables) can read in full.
      parseProfile(profile);
      if (process.env.UPDATE_GOLDEN || !existsSync(goldenPath(name)))
        writeFileSync(goldenPath(name), profile);
      expect(profile).toBe(readFileSync(goldenPath(name), 'utf8'));
    });
  }

  it('the same plan gives the same text, whatever the order of its lists', () => {
    const plan = plans['homebrew-node'];
    const shuffled = {
      ...plan,
      dylibDirs: [...plan.dylibDirs].reverse(),
      runtime: [...plan.runtime].reverse(),
    };
    expect(generateProfile(shuffled)).toBe(generateProfile(plan));
  });
});
