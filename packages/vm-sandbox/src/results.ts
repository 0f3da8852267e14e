/**
 * What an `mcp` app returns, checked and rebuilt on the host before the MCP SDK sees it. The SDK
 * validates a tool result with zod, and zod's error text for a malformed one can be a thousand
 * times its size (a 3 MB `{content: [{}, {}, …]}` took the host to 4 GB): the backend answers
 * only results it rebuilt field by field from an allowlist, and caps every error text it sends.
 */

/** Longest error text sent to the client. */
export const MAX_ERROR_TEXT = 4096;
/** Most content items (or resource contents, or prompt messages) in one result. */
export const MAX_RESULT_ITEMS = 10_000;

type Json = Record<string, unknown>;

/** A result the app returned that is not one the protocol allows; the message is short. */
export class InvalidResultError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidResultError';
  }
}

/** `text` cut to `max` characters, saying so. */
export function capText(text: string, max = MAX_ERROR_TEXT): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const fail = (where: string, what: string): never => {
  throw new InvalidResultError(`${where}: ${what}`);
};

function string(value: Json, key: string, where: string): string {
  const v = value[key];
  return typeof v === 'string' ? v : fail(where, `${key} must be a string`);
}

function optionalString(value: Json, key: string, where: string): Json {
  const v = value[key];
  if (v === undefined) return {};
  return typeof v === 'string' ? { [key]: v } : fail(where, `${key} must be a string`);
}

/** `_meta` and `annotations` pass as copied JSON objects. */
function extras(value: Json, where: string): Json {
  const out: Json = {};
  for (const key of ['_meta', 'annotations']) {
    const v = value[key];
    if (v === undefined) continue;
    if (!isObject(v)) fail(where, `${key} must be an object`);
    out[key] = JSON.parse(JSON.stringify(v)) as Json;
  }
  return out;
}

function resourceContents(value: unknown, where: string): Json {
  if (!isObject(value)) return fail(where, 'must be an object');
  const base = {
    uri: string(value, 'uri', where),
    ...optionalString(value, 'mimeType', where),
    ...extras(value, where),
  };
  if (typeof value.text === 'string') return { ...base, text: value.text };
  if (typeof value.blob === 'string') return { ...base, blob: value.blob };
  return fail(where, 'needs a text or blob string');
}

function contentBlock(value: unknown, where: string): Json {
  if (!isObject(value)) return fail(where, 'must be an object');
  const extra = extras(value, where);
  switch (value.type) {
    case 'text':
      return { type: 'text', text: string(value, 'text', where), ...extra };
    case 'image':
    case 'audio':
      return {
        type: value.type,
        data: string(value, 'data', where),
        mimeType: string(value, 'mimeType', where),
        ...extra,
      };
    case 'resource':
      return { type: 'resource', resource: resourceContents(value.resource, `${where}.resource`), ...extra };
    case 'resource_link':
      return {
        type: 'resource_link',
        uri: string(value, 'uri', where),
        name: string(value, 'name', where),
        ...optionalString(value, 'title', where),
        ...optionalString(value, 'description', where),
        ...optionalString(value, 'mimeType', where),
        ...extra,
      };
    default:
      return fail(where, 'type must be text, image, audio, resource or resource_link');
  }
}

function list(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value)) return fail(where, 'must be an array');
  if (value.length > MAX_RESULT_ITEMS) fail(where, `more than ${MAX_RESULT_ITEMS} items`);
  return value;
}

const asText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value ?? null));

/** A tool's return value as a CallToolResult: a string or any JSON becomes one text item. */
export function toToolResult(value: unknown): {
  content: Json[];
  isError?: boolean;
  structuredContent?: Json;
} {
  if (!isObject(value) || !('content' in value)) return { content: [{ type: 'text', text: asText(value) }] };
  const content = list(value.content, 'content').map((item, i) => contentBlock(item, `content[${i}]`));
  const result: { content: Json[]; isError?: boolean; structuredContent?: Json } = { content };
  if (value.isError !== undefined) {
    if (typeof value.isError !== 'boolean') fail('isError', 'must be a boolean');
    result.isError = value.isError as boolean;
  }
  if (value.structuredContent !== undefined) {
    if (!isObject(value.structuredContent)) fail('structuredContent', 'must be an object');
    result.structuredContent = JSON.parse(JSON.stringify(value.structuredContent)) as Json;
  }
  return result;
}

/** A resource handler's return value as a ReadResourceResult. */
export function toResourceResult(
  value: unknown,
  resource: { uri: string; mimeType?: string },
): { contents: Json[] } {
  if (isObject(value) && 'contents' in value) {
    return {
      contents: list(value.contents, 'contents').map((item, i) => resourceContents(item, `contents[${i}]`)),
    };
  }
  return {
    contents: [
      {
        uri: resource.uri,
        text: asText(value),
        ...(resource.mimeType ? { mimeType: resource.mimeType } : {}),
      },
    ],
  };
}

/** A prompt handler's return value as a GetPromptResult. */
export function toPromptResult(value: unknown): { messages: Json[]; description?: string } {
  if (!isObject(value) || !('messages' in value)) {
    return { messages: [{ role: 'user', content: { type: 'text', text: asText(value) } }] };
  }
  const messages = list(value.messages, 'messages').map((item, i) => {
    const where = `messages[${i}]`;
    if (!isObject(item)) return fail(where, 'must be an object');
    if (item.role !== 'user' && item.role !== 'assistant')
      return fail(where, 'role must be user or assistant');
    return { role: item.role, content: contentBlock(item.content, `${where}.content`) };
  });
  return { messages, ...optionalString(value, 'description', 'description') };
}
