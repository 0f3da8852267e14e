import { existsSync } from 'node:fs';
import {
  checkWindowsDependenciesAsync,
  DEFAULT_WINDOWS_PROXY_PORT_RANGE,
  resolveSrtWin,
  type SandboxDependencyCheck,
  type SandboxRuntimeConfig,
  type SrtWinConfig,
  type SrtWinSpawn,
  VENDORED_SRT_WIN_EXE,
  windowsInstallInstructions,
} from '@anthropic-ai/sandbox-runtime';
import { BackendUnavailableError } from '@mcpsandbox/core';

/** The install options srt's check and instructions take (srt does not export the type). */
type WindowsInstallContext = Omit<NonNullable<Parameters<typeof checkWindowsDependenciesAsync>[0]>, 'srtWin'>;

/** The parts of srt's Windows support the start uses: injected by tests, srt's own by default. */
export interface SrtWindowsApi {
  /** The srt-win.exe srt ships for this machine's architecture. */
  readonly vendoredSrtWin: string;
  readonly exists: (path: string) => boolean;
  readonly resolveSrtWin: (config: SrtWinConfig) => SrtWinSpawn;
  readonly checkDependencies: (
    options: WindowsInstallContext & { srtWin: SrtWinSpawn },
  ) => Promise<SandboxDependencyCheck>;
  readonly installInstructions: (install: WindowsInstallContext) => string;
  /** The loopback ports the WFP filter lets the sandbox user reach: the proxy listens in it. */
  readonly proxyPortRange: readonly [number, number];
}

export const srtWindowsApi: SrtWindowsApi = {
  vendoredSrtWin: VENDORED_SRT_WIN_EXE,
  exists: existsSync,
  resolveSrtWin,
  checkDependencies: checkWindowsDependenciesAsync,
  installInstructions: windowsInstallInstructions,
  proxyPortRange: DEFAULT_WINDOWS_PROXY_PORT_RANGE,
};

/**
 * The install as this backend expects it: srt's defaults (sublayer, port range, `srt-sandbox`
 * user) and loopback closed, the sandbox reaching nothing on the host but the proxy.
 */
const INSTALL: WindowsInstallContext = { allowLoopback: false };

/**
 * srt's install instructions, with the command pinned to the sandbox-runtime this backend runs:
 * an install by another release has another setup version, which this release's srt-win refuses.
 */
export function pinnedInstructions(api: SrtWindowsApi, version: string): string {
  return api
    .installInstructions(INSTALL)
    .replaceAll('npx @anthropic-ai/sandbox-runtime ', `npx @anthropic-ai/sandbox-runtime@${version} `);
}

function unavailable(what: string, api: SrtWindowsApi, version: string): BackendUnavailableError {
  return new BackendUnavailableError(
    `the srt backend cannot start on Windows: ${what}\n${pinnedInstructions(api, version)}\nRun the install from an elevated prompt (Run as administrator), then start mcp-sandbox again.\nEven installed, sandbox-runtime ${version} cannot yet run this backend's commands on Windows (see SECURITY.md): until it can, use --backend e2b.`,
    { code: 'E_SRT_DEPENDENCIES' },
  );
}

/**
 * What srt documents for an embedder on Windows: the srt-win path given explicitly (srt never
 * falls back to its packaged one by itself), then srt-win present, the sandbox user provisioned
 * and the WFP filters installed, each checked with that path. Any missing piece is an
 * E_SRT_DEPENDENCIES that names it and the install command.
 */
export async function checkWindowsEngine(
  api: SrtWindowsApi,
  version: string,
): Promise<{ readonly srtWin: SrtWinConfig; readonly warnings: readonly string[] }> {
  const srtWin: SrtWinConfig = { path: api.vendoredSrtWin };
  if (!api.exists(srtWin.path)) {
    throw new BackendUnavailableError(
      `the srt backend cannot start on Windows: srt-win.exe is missing (sandbox-runtime ${version} ships it at ${srtWin.path}, for x64 and arm64 only). Reinstall mcp-sandbox with its dependencies on an x64 or arm64 machine`,
      { code: 'E_SRT_DEPENDENCIES' },
    );
  }
  let spawn: SrtWinSpawn;
  try {
    spawn = api.resolveSrtWin(srtWin);
  } catch (error) {
    throw unavailable((error as Error).message, api, version);
  }
  const check = await api.checkDependencies({ ...INSTALL, srtWin: spawn });
  if (check.errors.length > 0) throw unavailable(missingPieces(check.errors), api, version);
  return { srtWin, warnings: check.warnings };
}

/** srt's errors without its own install text, which the message gives once, pinned. */
function missingPieces(errors: readonly string[]): string {
  return errors
    .map((error) => error.split('Windows sandbox needs a one-time install')[0]?.trim() ?? error)
    .join('; ');
}

/** The process-wide config's Windows part: srt-win by the path checked above. */
export function windowsManagerConfig(srtWin: SrtWinConfig): Pick<SandboxRuntimeConfig, 'windows'> {
  return { windows: { srtWin } };
}
