import { describe, expect, it } from 'vitest';
import { isSandboxError, SandboxError, SandboxFailureError, UsageError } from './errors.js';

// The binary bundles its own core; a custom backend throws the errors of the core it installed.
// A second instance of this very module stands for that other copy.
const secondCopy = new URL('./errors.ts?second-copy', import.meta.url).href;
const other = (await import(/* @vite-ignore */ secondCopy)) as typeof import('./errors.js');

describe('SandboxError across copies of core', () => {
  it('the second copy is a different module: its classes are not these', () => {
    expect(other.SandboxError).not.toBe(SandboxError);
    // The control: plain prototype chains do not meet.
    expect(Function.prototype[Symbol.hasInstance].call(SandboxError, new other.UsageError('x'))).toBe(false);
  });

  it('an error of the other copy is a SandboxError here, with its code, and matches its own class by name', () => {
    const failure = new other.SandboxFailureError('command not found: x', { code: 'E_COMMAND_NOT_FOUND' });
    expect(isSandboxError(failure)).toBe(true);
    expect(failure instanceof SandboxError).toBe(true);
    expect(failure instanceof SandboxFailureError).toBe(true);
    expect(failure instanceof UsageError).toBe(false);
    expect(new other.UsageError('bad flag') instanceof UsageError).toBe(true);
  });

  it('a look-alike without the brand, or without a string code, is not one', () => {
    class UsageErrorLookalike extends Error {
      code = 'E_USAGE';
    }
    expect(isSandboxError(new UsageErrorLookalike('x'))).toBe(false);
    const noCode = new other.SandboxError('E_X', 'x') as { code: unknown };
    noCode.code = 7;
    expect(isSandboxError(noCode)).toBe(false);
    expect(isSandboxError(null)).toBe(false);
    expect(isSandboxError('E_USAGE')).toBe(false);
  });

  it('plain instances still match as before', () => {
    expect(new UsageError('x') instanceof SandboxError).toBe(true);
    expect(new UsageError('x') instanceof SandboxFailureError).toBe(false);
    expect(new Error('x') instanceof SandboxError).toBe(false);
  });
});
