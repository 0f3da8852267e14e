import { describe, expect, it } from 'vitest';
import { createSrtBackend } from '../src/backend.js';
import { defaultEngineDeps, probeSrt, startSrtEngine } from '../src/engine.js';
import { srtPlatformOf } from '../src/policy.js';

// srt's Windows engine (srt-win) never ran a command here and cannot pass the promise suite that
// holds `local`: it is not used. On Windows the supported path is `local` inside WSL2, and every
// way into srt there says so, before anything of srt-win is looked at or started.

const WSL = /WSL2.*wsl\.exe -e mcp-sandbox run/s;

describe('srt on Windows: a refusal that points to WSL2', () => {
  it('has no Windows engine', () => {
    expect(srtPlatformOf('win32')).toBeUndefined();
  });

  it('the engine start refuses with E_SRT_PLATFORM, naming WSL2', async () => {
    await expect(startSrtEngine(defaultEngineDeps('win32'))).rejects.toMatchObject({
      code: 'E_SRT_PLATFORM',
      message: expect.stringMatching(WSL),
    });
  });

  it('a session and doctor say the same', async () => {
    const backend = createSrtBackend({ platform: 'win32' });
    expect(backend.describe?.()).toMatch(WSL);
    await expect(backend.create({ sessionId: 'w', env: {}, ttlMs: 1000 })).rejects.toMatchObject({
      code: 'E_SRT_PLATFORM',
      message: expect.stringMatching(WSL),
    });
    await expect(probeSrt('win32')).rejects.toMatchObject({ message: expect.stringMatching(WSL) });
  });
});
