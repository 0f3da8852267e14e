import type { Client } from '@modelcontextprotocol/client';

/** How the session was opened: the 2026-07-28 revision's `server/discover`, or 2025's `initialize`. */
export type Handshake = 'server/discover' | 'initialize';

/** What `inspect` learned of a server. */
export interface ServerReport {
  server: { name: string; version: string; title?: string } | null;
  protocolVersion: string | null;
  /** `modern` for 2026-07-28 and later (no handshake), `legacy` for the 2025 revisions. */
  era: 'modern' | 'legacy';
  handshake: Handshake;
  capabilities: Record<string, unknown>;
  instructions: string | null;
  tools: Array<{ name: string; description: string; required: string[] }>;
  resources: Array<{ uri: string; name: string; mimeType: string | null }>;
  resourceTemplates: Array<{ uriTemplate: string; name: string }>;
  prompts: Array<{ name: string; description: string; arguments: string[] }>;
  isolation: string;
  backend: string;
}

/** Lists what a connected server offers; each list walks every page (the client caps the walk). */
export async function collectReport(
  client: Client,
  backend: string,
  isolation: string,
): Promise<ServerReport> {
  const capabilities = (client.getServerCapabilities() ?? {}) as Record<string, unknown>;
  const info = client.getServerVersion();
  const era = client.getProtocolEra() === 'modern' ? 'modern' : 'legacy';
  const report: ServerReport = {
    server: info
      ? { name: info.name, version: info.version, ...(info.title ? { title: info.title } : {}) }
      : null,
    protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
    era,
    handshake: era === 'modern' ? 'server/discover' : 'initialize',
    capabilities,
    instructions: client.getInstructions() ?? null,
    tools: [],
    resources: [],
    resourceTemplates: [],
    prompts: [],
    backend,
    isolation,
  };
  if (capabilities.tools) {
    for (const tool of (await client.listTools()).tools) {
      const required = (tool.inputSchema as { required?: unknown }).required;
      report.tools.push({
        name: tool.name,
        description: firstLine(tool.description),
        required: Array.isArray(required) ? required.map(String) : [],
      });
    }
  }
  if (capabilities.resources) {
    for (const r of (await client.listResources()).resources)
      report.resources.push({ uri: r.uri, name: r.name, mimeType: r.mimeType ?? null });
    const templates = await client.listResourceTemplates().catch(() => ({ resourceTemplates: [] }));
    for (const t of templates.resourceTemplates)
      report.resourceTemplates.push({ uriTemplate: t.uriTemplate, name: t.name });
  }
  if (capabilities.prompts) {
    for (const p of (await client.listPrompts()).prompts) {
      report.prompts.push({
        name: p.name,
        description: firstLine(p.description),
        arguments: (p.arguments ?? []).map((a) => (a.required ? `${a.name}*` : a.name)),
      });
    }
  }
  return report;
}

export function formatReport(report: ServerReport): string {
  const lines: string[] = [];
  const server = report.server ? `${report.server.name} ${report.server.version}` : 'unnamed server';
  lines.push(
    `${server} · protocol ${report.protocolVersion ?? '?'} (${report.handshake}) · backend ${report.backend} (${report.isolation})`,
  );
  lines.push(`capabilities: ${Object.keys(report.capabilities).sort().join(', ') || 'none'}`);
  // Instructions are often markdown: show their first line of prose, not a heading.
  const instructions = report.instructions?.split('\n').find((l) => l.trim() && !l.trim().startsWith('#'));
  if (instructions) lines.push(`instructions: ${firstLine(instructions)}`);
  lines.push('', `tools (${report.tools.length})`);
  lines.push(
    ...table(
      ['name', 'required', 'description'],
      report.tools.map((t) => [t.name, t.required.join(', ') || '-', t.description]),
    ),
  );
  if (report.resources.length > 0 || report.resourceTemplates.length > 0) {
    lines.push('', `resources (${report.resources.length}, ${report.resourceTemplates.length} template(s))`);
    lines.push(
      ...table(
        ['name', 'uri', 'type'],
        [
          ...report.resources.map((r) => [r.name, r.uri, r.mimeType ?? '-']),
          ...report.resourceTemplates.map((t) => [t.name, t.uriTemplate, 'template']),
        ],
      ),
    );
  }
  if (report.prompts.length > 0) {
    lines.push('', `prompts (${report.prompts.length})`);
    lines.push(
      ...table(
        ['name', 'arguments', 'description'],
        report.prompts.map((p) => [p.name, p.arguments.join(', ') || '-', p.description]),
      ),
    );
  }
  return `${lines.join('\n')}\n`;
}

function table(header: string[], rows: string[][]): string[] {
  if (rows.length === 0) return ['  (none)'];
  const widths = header.map((h, i) =>
    Math.min(40, Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length))),
  );
  const cell = (text: string, i: number) => {
    const w = widths[i] as number;
    const fitted = text.length > w && i < header.length - 1 ? `${text.slice(0, w - 1)}…` : text;
    return i < header.length - 1 ? fitted.padEnd(w) : fitted;
  };
  return [header, ...rows].map((row) => `  ${row.map(cell).join('  ')}`.trimEnd());
}

function firstLine(text: string | undefined): string {
  const line = (text ?? '').trim().split('\n')[0] ?? '';
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
}
