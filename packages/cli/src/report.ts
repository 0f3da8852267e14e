import { BackendVersionError, ExitCode, isSandboxError, type Logger, UsageError } from '@mcpsandbox/core';

/** One actionable line for errors we expect; a stack only for bugs, and only with debug on. */
export function reportError(error: unknown, logger: Logger): number {
  if (error instanceof UsageError || error instanceof BackendVersionError) {
    logger.error(error.message);
    return ExitCode.usage;
  }
  if (isSandboxError(error)) {
    logger.error(error.message);
    return ExitCode.sandboxFailure;
  }
  logger.error(
    `unexpected failure: ${(error as Error)?.message ?? String(error)} (set MCP_SANDBOX_DEBUG=1 for details)`,
  );
  logger.debug((error as Error)?.stack ?? '');
  return ExitCode.sandboxFailure;
}
