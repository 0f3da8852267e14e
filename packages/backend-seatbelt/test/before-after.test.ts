import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generateProfile } from '../src/profile/generate.js';
import { decide, parseProfile } from '../src/sbpl/evaluate.js';
import { ISSUE_QUESTIONS, type Question, RW_MOUNT } from './issue-questions.js';
import { HOST_HOME, type PlanName, plans, SESSION_ROOT } from './plans.js';

// srt's goldens are read, never written: they are what `--backend srt` hands sandbox-exec today.
const SRT_GOLDENS = ['macos-no-grants', 'macos-rw-mount', 'macos-network-grant', 'macos-state'] as const;
const srtProfile = (name: string) =>
  parseProfile(readFileSync(new URL(`../../backend-srt/test/golden/${name}.sb`, import.meta.url), 'utf8'));
const TABLE = new URL('golden/decision-table.md', import.meta.url);

/** srt's goldens name their session root and rw mount otherwise: each question in their spelling. */
function inSrtSpelling(query: Question['query']): Question['query'] {
  const srt = (path: string | undefined) =>
    path
      ?.replace(SESSION_ROOT, '/private/var/folders/xy/T/mcp-sandbox-srt-AbCdEf')
      .replace(RW_MOUNT, `${HOST_HOME}/notes`);
  const path = srt(query.path);
  const newPath = srt(query.newPath);
  return { ...query, ...(path ? { path } : {}), ...(newPath ? { newPath } : {}) };
}

/** The closing note's table: each question of the issue, srt's answer per golden, and ours. */
function table(): string {
  const before = SRT_GOLDENS.map((name) => ({ name, profile: srtProfile(name) }));
  const after = (Object.keys(plans) as PlanName[]).map((name) => parseProfile(generateProfile(plans[name])));
  const rows = ISSUE_QUESTIONS.map((q) => {
    const srt = before.map(({ profile }) => decide(profile, inSrtSpelling(q.query)).action);
    const ours = new Set(after.map((profile) => decide(profile, q.query).action));
    return `| ${q.name} | ${srt.join(' | ')} | ${[...ours].join('/')} |`;
  });
  return [
    `| question | ${SRT_GOLDENS.map((n) => `srt ${n.replace('macos-', '')}`).join(' | ')} | seatbelt (all ${after.length} goldens) |`,
    `|---|${SRT_GOLDENS.map(() => '---').join('|')}|---|`,
    ...rows,
    '',
  ].join('\n');
}

describe('before and after: srt’s goldens and ours, asked the issue’s questions', () => {
  it('the table in test/golden/decision-table.md is current', () => {
    const text = table();
    if (process.env.UPDATE_GOLDEN || !existsSync(TABLE)) writeFileSync(TABLE, text);
    expect(text).toBe(readFileSync(TABLE, 'utf8'));
    // The package README shows the same table.
    expect(readFileSync(new URL('../README.md', import.meta.url), 'utf8')).toContain(text.trim());
  });

  it('srt’s profile allows what the issue says it allows (the evaluator reads it as the issue does)', () => {
    const srt = srtProfile('macos-no-grants');
    for (const path of [
      '/opt/homebrew/etc/redis.conf',
      '/System/Volumes/Data/Users/alice/.ssh/id_ed25519',
      '/dev/ttys001',
      '/Library/Keychains/System.keychain',
    ]) {
      expect(decide(srt, { op: 'file-read-data', path }).action, path).toBe('allow');
    }
    expect(decide(srt, { op: 'mach-lookup', name: 'com.apple.coreservices.launchservicesd' }).action).toBe(
      'allow',
    );
    expect(decide(srt, { op: 'file-read-data', path: '/Users/alice/.ssh/id_ed25519' }).action).toBe('deny');
  });
});
