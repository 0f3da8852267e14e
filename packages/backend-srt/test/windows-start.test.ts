import type {
  SandboxDependencyCheck,
  SandboxRuntimeConfig,
  SrtWinConfig,
} from '@anthropic-ai/sandbox-runtime';
import { windowsInstallInstructions } from '@anthropic-ai/sandbox-runtime';
import { BackendUnavailableError } from '@mcpsandbox/core';
import { describe, expect, it } from 'vitest';
import { EgressSwitch } from '../src/egress-switch.js';
import { probeSrt, refuseUnsupportedCommands, type SrtEngineDeps, startSrtEngine } from '../src/engine.js';
import { userDataRoots } from '../src/policy.js';
import type { SrtWindowsApi } from '../src/windows.js';

// The Windows start, on any OS: srt's own install instructions and config types, with the
// platform, srt-win's presence and srt's dependency check injected (no srt-win runs here).
const SRT_WIN =
  'C:\\Users\\ada\\AppData\\Roaming\\npm\\node_modules\\mcp-sandbox\\node_modules\\@anthropic-ai\\sandbox-runtime\\vendor\\srt-win\\x64\\srt-win.exe';
const PINNED = 'npx @anthropic-ai/sandbox-runtime@0.0.83 windows-install';
// srt's own wording for a machine without the install (interpretDependencyProbes, 0.0.83).
const NOT_PROVISIONED = `Sandbox user is not provisioned (user=false, cred=false). ${windowsInstallInstructions({ allowLoopback: false })}`;

interface Seen {
  initialized?: SandboxRuntimeConfig;
  checkedWith?: unknown;
  egressRange?: readonly [number, number] | undefined;
}

function deps(machine: { srtWin: boolean; check: SandboxDependencyCheck }, seen: Seen): SrtEngineDeps {
  const windows: SrtWindowsApi = {
    vendoredSrtWin: SRT_WIN,
    exists: (path) => machine.srtWin && path === SRT_WIN,
    resolveSrtWin: (config: SrtWinConfig) => ({ exe: config.path, prependArgs: ['--srt-win'] }),
    checkDependencies: async (options) => {
      seen.checkedWith = options;
      return machine.check;
    },
    installInstructions: windowsInstallInstructions,
    proxyPortRange: [60080, 60089],
  };
  return {
    platform: 'win32',
    manager: {
      checkDependencies: () => {
        throw new Error('the POSIX check must not run on Windows');
      },
      initialize: async (config: SandboxRuntimeConfig) => {
        seen.initialized = config;
      },
      getLinuxHttpSocketPath: () => undefined,
      getLinuxSocksSocketPath: () => undefined,
    } as unknown as SrtEngineDeps['manager'],
    windows,
    // A real listener, on a free port of the range asked for (the test may run beside others).
    openEgress: async (range) => {
      seen.egressRange = range;
      return EgressSwitch.open([40000 + (process.pid % 20000), 40000 + (process.pid % 20000) + 64]);
    },
    bwrapShim: () => {
      throw new Error('no bwrap shim on Windows');
    },
  };
}

async function startError(machine: { srtWin: boolean; check: SandboxDependencyCheck }, seen: Seen = {}) {
  const error = await startSrtEngine(deps(machine, seen)).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(BackendUnavailableError);
  return error as BackendUnavailableError;
}

describe('srt on Windows: the start', () => {
  it('srt-win missing: E_SRT_DEPENDENCIES naming the file, nothing checked or initialized', async () => {
    const seen: Seen = {};
    const error = await startError({ srtWin: false, check: { errors: [], warnings: [] } }, seen);
    expect(error.code).toBe('E_SRT_DEPENDENCIES');
    expect(error.message).toContain('srt-win.exe is missing');
    expect(error.message).toContain(SRT_WIN);
    expect(error.stack).toBeDefined();
    expect(seen.checkedWith).toBeUndefined();
    expect(seen.initialized).toBeUndefined();
  });

  it("srt-win present, sandbox user not provisioned: says so, with srt's install command pinned to 0.0.83", async () => {
    const seen: Seen = {};
    const error = await startError(
      { srtWin: true, check: { errors: [NOT_PROVISIONED], warnings: [] } },
      seen,
    );
    expect(error.code).toBe('E_SRT_DEPENDENCIES');
    expect(error.message).toContain('Sandbox user is not provisioned (user=false, cred=false)');
    expect(error.message).toContain('from an elevated prompt (Run as administrator)');
    expect(error.message).toContain(PINNED);
    // srt's instructions appear once, not once per error.
    expect(error.message.split('one-time install')).toHaveLength(2);
    // The check ran against the srt-win path the start resolved, with loopback closed.
    expect(seen.checkedWith).toEqual({
      allowLoopback: false,
      srtWin: { exe: SRT_WIN, prependArgs: ['--srt-win'] },
    });
    expect(seen.initialized).toBeUndefined();
  });

  it('WFP filters missing: the same, naming the filters', async () => {
    const wfp = `WFP filters not installed under sublayer (default). ${windowsInstallInstructions({ allowLoopback: false })}`;
    const error = await startError({ srtWin: true, check: { errors: [wfp], warnings: [] } });
    expect(error.message).toContain('WFP filters not installed');
    // Nobody is sent to an elevated install without being told what it does not yet give them.
    expect(error.message).toContain('cannot yet run this backend');
    expect(error.message).toContain(PINNED);
  });

  it('all present: srt is initialized with the srt-win path and the proxy inside the WFP port range', async () => {
    const seen: Seen = {};
    const engine = await startSrtEngine(deps({ srtWin: true, check: { errors: [], warnings: [] } }, seen));
    try {
      expect(engine.platform).toBe('windows');
      expect(seen.initialized?.windows?.srtWin).toEqual({ path: SRT_WIN });
      expect(seen.egressRange).toEqual([60080, 60089]);
      expect(seen.initialized?.network.httpProxyPort).toBe(engine.egress.port);
      expect(seen.initialized?.network.socksProxyPort).toBe(engine.egress.port);
      expect(seen.initialized?.bwrapPath).toBeUndefined();
      // Ready, but no command runs there yet: said plainly, not as srt's raw error.
      expect(() => refuseUnsupportedCommands(engine.platform)).toThrow(
        /does not run commands on Windows yet/,
      );
    } finally {
      engine.egress.close();
    }
  });

  it("doctor's probe names the engine and the missing piece with the same command", async () => {
    const error = await probeSrt('win32', () =>
      startSrtEngine(deps({ srtWin: true, check: { errors: [NOT_PROVISIONED], warnings: [] } }, {})),
    ).catch((e: unknown) => e as BackendUnavailableError);
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect((error as BackendUnavailableError).code).toBe('E_SRT_DEPENDENCIES');
    expect((error as Error).message).toMatch(/^srt-win \(a sandbox user, .*\), sandbox-runtime 0\.0\.83: /);
    expect((error as Error).message).toContain('Sandbox user is not provisioned');
    expect((error as Error).message).toContain(PINNED);
  });
});

describe('srt on Windows: the user data roots', () => {
  const env = {
    USERPROFILE: 'C:\\Users\\ada',
    APPDATA: 'C:\\Users\\ada\\AppData\\Roaming',
    LOCALAPPDATA: 'D:\\Redirected\\ada\\Local',
    TEMP: 'C:\\Users\\ada\\AppData\\Local\\Temp',
    ProgramData: 'C:\\ProgramData',
  };
  const roots = userDataRoots('windows', 'C:\\Users\\ada', 'C:\\Users\\ada\\AppData\\Local\\Temp', env);

  it("deny the profile, every user's profile, app data (redirected too), temp and ProgramData, in Windows spelling", () => {
    expect(roots).toEqual([
      'C:\\Users\\ada',
      'C:\\Users',
      'C:\\Users\\ada\\AppData\\Roaming',
      'D:\\Redirected\\ada\\Local',
      'C:\\Users\\ada\\AppData\\Local\\Temp',
      'C:\\ProgramData',
    ]);
    expect(roots.some((root) => root.startsWith('/'))).toBe(false);
  });

  it('never a drive root, a relative path or the same folder twice in another case', () => {
    const odd = userDataRoots('windows', 'C:\\', 'relative\\tmp', {
      APPDATA: 'c:\\USERS\\ada',
      USERPROFILE: 'C:\\Users\\Ada',
    });
    expect(odd).toEqual(['C:\\Users\\Ada']);
  });
});
