import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { createFakeBackend } from '@mcpsandbox/backend-fake';
import { type CliOptions, runCli } from '../src/index.js';

export const FIXTURES = new URL('./fixtures/', import.meta.url).pathname;

export function fixture(path: string): string {
  return readFileSync(join(FIXTURES, path), 'utf8');
}

class Collect extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** A temporary home and project folder, and runCli pointed at them through the injected io. */
export function sandboxHome() {
  const root = mkdtempSync(join(tmpdir(), 'mcp-sandbox-cli-'));
  const home = join(root, 'home');
  const project = join(root, 'project');
  mkdirSync(home, { recursive: true });
  mkdirSync(project, { recursive: true });
  const env: Record<string, string | undefined> = { HOME: home, PATH: process.env.PATH };
  const run = async (args: string[], extra: Partial<CliOptions> = {}, cwd = project): Promise<Run> => {
    const stdout = new Collect();
    const stderr = new Collect();
    const code = await runCli(args, {
      // Stand-ins for the binary's backends, with the isolation each declares: ls judges entries by it.
      backends: {
        fake: { summary: 'fake', isolation: 'os', create: createFakeBackend },
        local: { summary: 'pretend local', isolation: 'os', create: createFakeBackend },
        e2b: { summary: 'pretend e2b', isolation: 'microvm', create: createFakeBackend },
        none: { summary: 'pretend none', isolation: 'none', create: createFakeBackend },
      },
      defaultBackend: 'local',
      version: '1.2.3',
      io: { stdin: new PassThrough(), stdout, stderr, env, cwd },
      ...extra,
    });
    return { code, stdout: stdout.text, stderr: stderr.text };
  };
  const put = (path: string, text: string) => {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  };
  const backups = (file: string) =>
    readdirSync(dirname(file))
      .filter((n) => n.startsWith(`${file.split('/').pop()}.mcp-sandbox-`))
      .map((n) => join(dirname(file), n));
  return {
    root,
    home,
    project,
    env,
    run,
    put,
    backups,
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}
