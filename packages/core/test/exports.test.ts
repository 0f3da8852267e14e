import { describe, expect, it } from 'vitest';
import * as conformance from '../src/conformance/index.js';
import * as core from '../src/index.js';

// The public surface is curated: adding or removing a runtime export is a deliberate, reviewed change.
describe('@mcpsandbox/core public exports', () => {
  it('exports exactly these values', () => {
    expect(Object.keys(core).sort()).toMatchInlineSnapshot(`
      [
        "AbortedError",
        "BackendUnavailableError",
        "BackendVersionError",
        "BridgeErrorCode",
        "COPY_LIMITS",
        "ControlEscaper",
        "DEBUG_ENV",
        "DEFAULT_MAX_LINE_BYTES",
        "DEFAULT_SHUTDOWN_TIMING",
        "DEFAULT_TTL",
        "ExitCode",
        "ISOLATION_LEVELS",
        "JsonlTrace",
        "LineFramer",
        "MAX_TIMER_MS",
        "MIN_ENCODED_REDACTED_BYTES",
        "MIN_REDACTED_LENGTH",
        "PendingBytes",
        "PinChangedError",
        "ProcessClosedError",
        "REDACTED",
        "RegistryError",
        "SPECIFICATION_VERSION",
        "SandboxError",
        "SandboxFailureError",
        "SecretSet",
        "SetupFailedError",
        "TRACE_VERSION",
        "ToolPolicy",
        "UsageError",
        "adaptChildProcess",
        "armTtl",
        "createRedactor",
        "createStderrLogger",
        "defaultPinLockFile",
        "digestTool",
        "drainOrClose",
        "errorResponseLine",
        "escapeControls",
        "exitCodeOf",
        "filePinStore",
        "formatDuration",
        "globToRegExp",
        "grantFlagValue",
        "hostText",
        "inspectMessage",
        "isSandboxError",
        "isolationRank",
        "jsonForTerminal",
        "killAll",
        "lineContent",
        "looksSecret",
        "openTraceFile",
        "parseDuration",
        "parseHost",
        "parseHostName",
        "parseIpLiteral",
        "parseRegistrySpec",
        "pinNpxPackage",
        "pinNpxSpec",
        "rawTopLevelValue",
        "readPinLock",
        "readTrace",
        "redactLogger",
        "resolveEnvAllowlist",
        "resolveFromRegistry",
        "signalNumber",
        "silentLogger",
        "startBridge",
        "summarizeTrace",
        "updatePins",
      ]
    `);
  });

  it('exports the conformance suite from its own entry', () => {
    expect(Object.keys(conformance).sort()).toEqual(['PROBE_SOURCE', 'nodeProbe', 'runConformanceSuite']);
  });
});
