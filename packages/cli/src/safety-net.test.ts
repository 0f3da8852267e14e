import { EventEmitter } from 'node:events';
import type { BridgeResult, BridgeSession } from '@mcpsandbox/core';
import { silentLogger } from '@mcpsandbox/core';
import { describe, expect, it } from 'vitest';
import type { FaultSource } from './options.js';
import { HostFaultError, SafetyNet } from './safety-net.js';

function faults(): EventEmitter & FaultSource {
  return new EventEmitter() as EventEmitter & FaultSource;
}

function fakeSession(closesAfterCrash: boolean): BridgeSession & { crashed: unknown[] } {
  let finish!: (result: BridgeResult) => void;
  const done = new Promise<BridgeResult>((resolve) => {
    finish = resolve;
  });
  const crashed: unknown[] = [];
  return {
    done,
    started: Promise.resolve(true),
    crashed,
    stop: () => finish({ exitCode: 130, reason: 'signal' }),
    crash: (error) => {
      crashed.push(error);
      if (closesAfterCrash) finish({ exitCode: 125, reason: 'bridge-crash' });
    },
  };
}

describe('SafetyNet', () => {
  it('ends the work with HostFaultError when a fault comes before a session', async () => {
    const source = faults();
    const net = new SafetyNet(source, silentLogger);
    const work = net.guard(new Promise<never>(() => undefined));
    source.emit('unhandledRejection', new Error('early\x1b[2J'));
    await expect(work).rejects.toBeInstanceOf(HostFaultError);
    await expect(work).rejects.toThrow('internal error: early?[2J');
    net.dispose();
    expect(source.listenerCount('unhandledRejection')).toBe(0);
    expect(source.listenerCount('uncaughtException')).toBe(0);
  });

  it('crashes the attached session once and reports 125', async () => {
    const source = faults();
    const net = new SafetyNet(source, silentLogger);
    const session = fakeSession(true);
    net.attach(session);
    const result = net.result(session);
    source.emit('uncaughtException', new Error('first'));
    source.emit('uncaughtException', new Error('second'));
    expect(await result).toMatchObject({ exitCode: 125, reason: 'bridge-crash' });
    expect(session.crashed).toHaveLength(1);
    net.dispose();
  });

  it('crashes a session attached after the fault', () => {
    const source = faults();
    const net = new SafetyNet(source, silentLogger);
    source.emit('uncaughtException', new Error('between plan and start'));
    const session = fakeSession(true);
    net.attach(session);
    expect(session.crashed).toHaveLength(1);
    net.dispose();
  });

  it('ends with 125 at the deadline when the session never closes', async () => {
    const source = faults();
    const net = new SafetyNet(source, silentLogger);
    const session = fakeSession(false);
    net.attach(session);
    const result = net.result(session, 50);
    source.emit('uncaughtException', new Error('stuck'));
    expect(await result).toMatchObject({ exitCode: 125, reason: 'bridge-crash' });
    net.dispose();
  });

  it('passes a normal result through', async () => {
    const net = new SafetyNet(faults(), silentLogger);
    const session = fakeSession(true);
    net.attach(session);
    session.stop('SIGINT');
    expect(await net.result(session)).toMatchObject({ exitCode: 130, reason: 'signal' });
    net.dispose();
  });
});
