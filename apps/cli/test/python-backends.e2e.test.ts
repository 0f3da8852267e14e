/**
 * uvx servers on the backends that do not install them: `e2b` (against the offline fake of E2B:
 * the cloud is not reachable from the machines this is tested on) and `vm` refuse with the reason
 * and the alternative, through the built binary, before the server's command runs anywhere.
 */
import { FAKE_API_KEY, type FakeE2B, startFakeE2B } from '@mcpsandbox/backend-e2b/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnBin } from './helpers.js';

let fake: FakeE2B;
beforeAll(async () => {
  fake = await startFakeE2B();
});
afterAll(async () => {
  await fake.close();
});

async function run(args: string[], env: Record<string, string>) {
  const bridge = spawnBin(['run', ...args], {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/',
    ...env,
  });
  const result = await bridge.result;
  bridge.child.stdin.destroy();
  return result;
}

describe('uvx on e2b and vm', () => {
  it('e2b: refused in the VM before anything starts there, with the secret never sent to a process', async () => {
    const result = await run(['--backend', 'e2b', '--env', 'JIRA_API_TOKEN', '--', 'uvx', 'mcp-atlassian'], {
      E2B_API_KEY: FAKE_API_KEY,
      E2B_API_URL: fake.apiUrl,
      E2B_SANDBOX_URL: fake.sandboxUrl,
      JIRA_API_TOKEN: 'jira-secret-value',
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/the e2b backend does not run uvx servers yet: .*--backend local/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    const boxes = [...fake.sandboxes.values()];
    expect(boxes.length).toBe(1);
    expect(boxes.every((box) => box.starts.length === 0 && !box.alive)).toBe(true);
  });

  it('vm: refused with the backend that runs it', async () => {
    const result = await run(['--backend', 'vm', '--', 'uvx', 'mcp-server-time'], {});
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/the vm backend runs JavaScript apps; .*--backend local/);
  });
});
