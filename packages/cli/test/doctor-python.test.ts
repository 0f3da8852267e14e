/**
 * doctor's uv, Python and uv cache lines on faked machines: what is run (only uv and python3 no
 * sandbox could have written, from `/`, uv without project configuration) and what is said.
 */
import { describe, expect, it } from 'vitest';
import {
  type CheckResult,
  type DoctorHost,
  type ExecResult,
  type ProgramCandidate,
  standardChecks,
} from '../src/index.js';

const ok = (stdout: string): ExecResult => ({ started: true, code: 0, stdout, stderr: '' });
const missing: ExecResult = { started: false, code: null, stdout: '', stderr: 'ENOENT' };

interface Machine {
  programs: Record<string, ProgramCandidate[]>;
  files?: Record<string, ProgramCandidate>;
  run: Record<string, ExecResult>;
  dirs?: Record<string, string[]>;
  env?: Record<string, string>;
}

function host(machine: Machine): DoctorHost & { calls: string[] } {
  const calls: string[] = [];
  return {
    platform: 'linux',
    nodeVersion: '20.19.1',
    env: machine.env ?? { HOME: '/home/u', PATH: '/usr/bin' },
    calls,
    exec: async (file, args, options) => {
      const line = [file, ...args].join(' ');
      calls.push(`${options?.cwd ?? '(cwd)'} ${line}`);
      return machine.run[line] ?? missing;
    },
    programs: async (name) => machine.programs[name] ?? [],
    fileFacts: async (path) => machine.files?.[path],
    listDir: async (path) => machine.dirs?.[path],
    readText: async () => undefined,
    folderSize: async (path) =>
      path === '/home/u/.cache/uv' ? { bytes: 3 * 2 ** 20, entries: 4 } : undefined,
  };
}

async function lines(h: DoctorHost): Promise<Record<string, CheckResult>> {
  const out: Record<string, CheckResult> = {};
  for (const check of standardChecks(h)) {
    if (['uv', 'python', 'uv-cache'].includes(check.id)) out[check.id] = await check.run();
  }
  return out;
}

const native = (path: string): ProgramCandidate => ({ path, real: path, native: true });
const UV_RUNS = {
  '/usr/local/bin/uv --version': ok('uv 0.13.8 (abc 2026-01-01)\n'),
  '/usr/local/bin/uv --no-config python dir': ok('/home/u/.local/share/uv/python\n'),
  '/usr/local/bin/uv --no-config cache dir': ok('/home/u/.cache/uv\n'),
};

describe('doctor: uv, its Pythons and cache', () => {
  it('a native uv on PATH: its version, python3 and the managed Pythons, the cache uv names', async () => {
    const h = host({
      programs: { uv: [native('/usr/local/bin/uv')], python3: [native('/usr/bin/python3')] },
      run: {
        ...UV_RUNS,
        '/usr/bin/python3 -I -c import sys; print("%d.%d.%d" % sys.version_info[:3])': ok('3.11.2\n'),
      },
      dirs: {
        '/home/u/.local/share/uv/python': [
          'cpython-3.12.7-linux-x86_64-gnu',
          'pypy-3.10.14-linux-x86_64-gnu',
          '.lock',
          'cpython-3.13.1+freethreaded-linux-x86_64-gnu',
          'cpython-\u001b[31m',
        ],
      },
    });
    const r = await lines(h);
    expect(r.uv).toEqual({ status: 'ok', title: 'uv', summary: '0.13.8 at /usr/local/bin/uv' });
    expect(r.python?.summary).toBe(
      '3.11.2 at /usr/bin/python3; uv-managed: 3.12.7, pypy 3.10.14, 3.13.1 (in /home/u/.local/share/uv/python)',
    );
    expect(r['uv-cache']?.summary).toBe('/home/u/.cache/uv (3.0 MiB, 4 entries)');
    // Everything from `/`: a working folder's uv.toml, pyproject.toml or .python-version chooses nothing.
    expect(h.calls.every((c) => c.startsWith('/ '))).toBe(true);
  });

  it('uv behind a shim: found through the uv package of python3, run by its real path', async () => {
    const h = host({
      programs: {
        uv: [{ path: '/home/u/.pyenv/shims/uv', real: '/home/u/.pyenv/shims/uv', native: false }],
        python3: [
          { path: '/home/u/.pyenv/shims/python3', real: '/home/u/.pyenv/shims/python3', native: false },
        ],
      },
      files: { '/home/u/.pyenv/versions/3.11.7/bin/uv': native('/home/u/.pyenv/versions/3.11.7/bin/uv') },
      run: {
        '/home/u/.pyenv/shims/python3 -I -c import uv; print(uv.find_uv_bin())': ok(
          '/home/u/.pyenv/versions/3.11.7/bin/uv\n',
        ),
        '/home/u/.pyenv/versions/3.11.7/bin/uv --version': ok('uv 0.13.8\n'),
      },
    });
    const r = await lines(h);
    expect(r.uv?.summary).toBe('0.13.8 at /home/u/.pyenv/versions/3.11.7/bin/uv');
    expect(h.calls).not.toContain('/ /home/u/.pyenv/shims/uv --version');
  });

  it('attack: a uv or python3 a sandbox could have written is never run, and is named', async () => {
    const planted: ProgramCandidate = {
      path: '/work/proj/.venv/bin/uv',
      real: '/work/proj/.venv/bin/uv',
      native: true,
      writable: 'in the working folder',
    };
    const h = host({
      programs: {
        uv: [{ path: 'bin/uv', real: 'bin/uv', native: false, writable: 'a relative PATH entry' }, planted],
        python3: [
          {
            ...planted,
            path: '/tmp/x/python3',
            real: '/tmp/x/python3',
            writable: 'in a folder anyone may write',
          },
        ],
      },
      run: {},
    });
    const r = await lines(h);
    expect(r.uv?.status).toBe('warn');
    expect(r.uv?.summary).toBe(
      'not found: uvx servers need it; not run, as a sandbox could have written them: bin/uv (a relative PATH entry), /work/proj/.venv/bin/uv (in the working folder), /tmp/x/python3 (in a folder anyone may write)',
    );
    expect(h.calls.filter((c) => /proj|\/tmp\/x|bin\/uv/.test(c))).toEqual([]);
    expect(r['uv-cache']?.summary).toBe('/home/u/.cache/uv (3.0 MiB, 4 entries)');
  });

  it('attack: a uv path python3 prints that a sandbox could have written is not run', async () => {
    const h = host({
      programs: { python3: [native('/usr/bin/python3')] },
      files: {
        '/work/proj/uv': {
          path: '/work/proj/uv',
          real: '/work/proj/uv',
          native: true,
          writable: 'in the working folder',
        },
      },
      run: { '/usr/bin/python3 -I -c import uv; print(uv.find_uv_bin())': ok('/work/proj/uv\n') },
    });
    const r = await lines(h);
    expect(r.uv?.status).toBe('warn');
    expect(h.calls.some((c) => c.includes('/work/proj/uv '))).toBe(false);
  });

  it('UV_CACHE_DIR is the cache; a host without program lookups runs no uv', async () => {
    const h: DoctorHost & { calls?: string[] } = {
      ...host({ programs: {}, run: {}, env: { HOME: '/home/u', UV_CACHE_DIR: '/home/u/.cache/uv' } }),
    };
    delete (h as { programs?: unknown }).programs;
    const r = await lines(h);
    expect(r.uv?.summary).toBe('not found: uvx servers need it');
    expect(r['uv-cache']?.summary).toBe('/home/u/.cache/uv (3.0 MiB, 4 entries)');
    expect(h.calls).toEqual([]);
  });
});
