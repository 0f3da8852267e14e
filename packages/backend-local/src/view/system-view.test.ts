import { describe, expect, it } from 'vitest';
import { systemView } from './system-view.js';

describe('systemView', () => {
  it('is one read-only bind of / when every target exists or is hidden', () => {
    expect(systemView(['/usr', '/tmp/x', '/home/a/b'], ['/home', '/tmp'])).toEqual({
      args: ['--ro-bind', '/', '/'],
      readOnly: [],
    });
  });

  it('turns the deepest existing directory above a missing target into a tmpfs with its entries bound back', () => {
    const view = systemView(['/usr/share/mcp-sandbox-missing/data'], ['/home', '/tmp']);
    expect(view.readOnly).toEqual(['/usr/share']);
    expect(view.args.slice(0, 5)).toEqual(['--ro-bind', '/', '/', '--tmpfs', '/usr/share']);
    expect(view.args).toContain('/usr/share/doc');
    const top = systemView(['/mcp-sandbox-missing'], ['/home', '/tmp']);
    expect(top.readOnly).toEqual(['/']);
    // bubblewrap's own root is the tmpfs: no bind of / at all, each entry of / bound back.
    expect(top.args.join(' ')).not.toContain('--ro-bind / /');
    expect(top.args).not.toContain('--tmpfs');
    expect(top.args.join(' ')).toMatch(/--ro-bind \/usr \/usr/);
  });
});
