import { UsageError } from '@mcpsandbox/core';
import { type Node, parse } from 'acorn';

/** The app failed the pre-compile check (syntax, or a construct the sandbox refuses). */
export class AppCodeError extends UsageError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

const ENTRY = '__mcpsbx.main';

/**
 * Wraps the app as an async function handed to the sandbox's entry point and checks it with a
 * real parser: the wrapped program must be exactly that one call (the source cannot break out of
 * the wrapper), and must contain no `import()` (Node would answer it with host-realm errors).
 */
export function prepareApp(code: string): string {
  const wrapped = `${ENTRY}((async function () {\n${code}\n}))`;
  let program: Node;
  try {
    program = parse(wrapped, { ecmaVersion: 'latest', sourceType: 'script' });
  } catch (error) {
    throw new AppCodeError(`the app does not parse: ${(error as Error).message}`, { cause: error });
  }
  const body = (program as unknown as { body: Array<Record<string, unknown>> }).body;
  const statement = body[0];
  const call = statement?.expression as Record<string, unknown> | undefined;
  const args = call?.arguments as Array<Record<string, unknown>> | undefined;
  if (
    body.length !== 1 ||
    statement?.type !== 'ExpressionStatement' ||
    call?.type !== 'CallExpression' ||
    args?.length !== 1 ||
    args[0]?.type !== 'FunctionExpression' ||
    args[0]?.end !== wrapped.length - 2
  ) {
    throw new AppCodeError('the app must be a script body (it closes the wrapper function)');
  }
  rejectForbidden(program);
  return wrapped;
}

/** Checks a host-supplied helper function's source and returns it as an expression. */
export function prepareHelper(name: string, fn: (...args: never[]) => unknown): string {
  const source = Function.prototype.toString.call(fn);
  if (/\{\s*\[native code\]\s*\}\s*$/.test(source)) {
    throw new UsageError(`global ${name}: a native or bound function cannot be rebuilt inside the sandbox`);
  }
  for (const candidate of [`(${source})`, `Object.values({${source}})[0]`]) {
    try {
      const program = parse(candidate, { ecmaVersion: 'latest', sourceType: 'script' });
      if ((program as unknown as { body: unknown[] }).body.length !== 1) continue;
      rejectForbidden(program);
      return candidate;
    } catch (error) {
      if (error instanceof AppCodeError) throw error;
    }
  }
  throw new UsageError(`global ${name}: cannot rebuild this function inside the sandbox from its source`);
}

function rejectForbidden(node: unknown): void {
  // Iterative walk: a deeply nested program must not overflow the host's stack here.
  const stack: unknown[] = [node];
  while (stack.length > 0) {
    const current = stack.pop();
    if (current === null || typeof current !== 'object') continue;
    if (Array.isArray(current)) {
      for (const item of current) stack.push(item);
      continue;
    }
    const type = (current as { type?: unknown }).type;
    if (type === 'ImportExpression') throw new AppCodeError('import() is not available in this sandbox');
    if (type === 'MetaProperty') throw new AppCodeError('import.meta is not available in this sandbox');
    for (const key of Object.keys(current)) {
      if (key === 'loc' || key === 'range') continue;
      const value = (current as Record<string, unknown>)[key];
      if (value !== null && typeof value === 'object') stack.push(value);
    }
  }
}
