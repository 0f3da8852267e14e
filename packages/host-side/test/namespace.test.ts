import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { endNamespace, identifyInit, killInit } from '../src/namespace.js';

describe('namespace init tracking', () => {
  it('takes no process of our own namespace for an init', async () => {
    expect(identifyInit(process.pid)).toBeUndefined();
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      expect(identifyInit(child.pid as number)).toBeUndefined();
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('kills a pid namespace through its init, and finds nothing left', async () => {
    // A namespace of our own with a daemon in it: bwrap's init, a shell, a setsid sleep.
    const box = spawn(
      'bwrap',
      [
        '--unshare-user',
        '--unshare-pid',
        '--ro-bind',
        '/',
        '/',
        '--proc',
        '/proc',
        '--info-fd',
        '3',
        '--',
        'sh',
        '-c',
        'setsid sleep 60 & exec sleep 60',
      ],
      { stdio: ['ignore', 'ignore', 'inherit', 'pipe'] },
    );
    let info = '';
    for await (const chunk of box.stdio[3] as NodeJS.ReadableStream) info += chunk.toString();
    const pid = Number(/"child-pid"\s*:\s*(\d+)/.exec(info)?.[1]);
    const init = identifyInit(pid);
    expect(init?.pid).toBe(pid);
    expect(init?.namespace).toMatch(/^pid:\[\d+\]$/);
    expect(await endNamespace(init as NonNullable<typeof init>)).toEqual([]);
    expect(killInit(init as NonNullable<typeof init>)).toBe(false);
    box.kill('SIGKILL');
  });
});
