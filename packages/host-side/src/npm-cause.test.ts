import { describe, expect, it } from 'vitest';
import { describeNpmCause, parseNpmCause } from './npm-cause.js';

const said = (text: string) =>
  describeNpmCause(parseNpmCause(text.split('\n')) ?? { kind: 'other', code: 'NONE' });

describe("npm's cause, from its own code line (npm 11 output)", () => {
  it('names a failed script, its package and exit code', () => {
    expect(
      said(
        'npm error code 3\nnpm error path /p/node_modules/@scope/failer\nnpm error command failed\n' +
          'npm error command sh -c node install.js\nnpm error boom',
      ),
    ).toBe('an install script of @scope/failer exited with code 3');
    expect(said('npm ERR! code ELIFECYCLE\nnpm ERR! errno 2')).toBe('an install script exited with code 2');
  });

  it('names HTTP statuses, resolution and connection failures, and unknown codes by code only', () => {
    expect(said('npm error code E404\nnpm error 404 Not Found - GET http://r/x')).toBe(
      'the registry has no such package or version (HTTP 404)',
    );
    expect(said('npm error code E503')).toBe('the registry answered HTTP 503');
    expect(said('npm error code ENOTFOUND\nnpm error syscall getaddrinfo')).toBe(
      'a host npm needed does not resolve from the install step (ENOTFOUND)',
    );
    expect(said('npm error code ECONNREFUSED')).toBe('a connection npm needed failed (ECONNREFUSED)');
    expect(said('npm error code ETARGET')).toBe('no published version matches the version asked for');
    expect(said('npm error code ERESOLVE')).toMatch(/conflicting peer dependencies/);
    expect(said('npm error code EINTEGRITY')).toMatch(/integrity/);
    expect(said('npm error code EWHATEVER')).toBe('npm failed with EWHATEVER');
  });

  it('attack: a script that prints a code line of its own, or a code or package name with text of its own, does not choose the words', () => {
    // npm's block comes last: a script's own earlier line does not win.
    expect(said('npm error code E404\nsome output\nnpm error code 1')).toBe(
      'an install script exited with code 1',
    );
    expect(parseNpmCause(['npm error code E404;rm -rf ~'])).toBeUndefined();
    expect(parseNpmCause(['npm error code \u001b[2Jok'])).toBeUndefined();
    expect(
      said('npm error code 1\nnpm error path /p/node_modules/evil\u001b]0;x\u0007\nnpm error command failed'),
    ).toBe('an install script exited with code 1');
    expect(parseNpmCause(['nothing from npm'])).toBeUndefined();
  });
});
