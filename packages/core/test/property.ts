import fc from 'fast-check';

/**
 * One seed per test run for every property, shown in the suite's name so that a failure in a log
 * can be replayed: `FC_SEED=<seed> npx vitest run <file>`. `FC_RUNS` raises the case count.
 * fast-check prints the seed and the shrunk counterexample of a failure too.
 */
export const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : Date.now() % 2 ** 31;
export const RUNS = process.env.FC_RUNS ? Number(process.env.FC_RUNS) : 5_000;

export function check<T>(
  property: fc.IProperty<T> | fc.IAsyncProperty<T>,
  runs = RUNS,
): void | Promise<void> {
  return fc.assert(property as fc.IProperty<T>, { seed: SEED, numRuns: runs });
}

/**
 * An independent JSON reader for the tests: whether the first or the last of duplicate keys wins
 * is a parameter, so the tests can read a line the way a client with the other habit would.
 */
export function parseJson(text: string, firstKeyWins: boolean): unknown {
  let i = 0;
  const space = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const value = (): unknown => {
    space();
    const c = text[i];
    if (c === '{') {
      i++;
      const out: Record<string, unknown> = Object.create(null);
      space();
      if (text[i] === '}') {
        i++;
        return out;
      }
      for (;;) {
        space();
        const key = value() as string;
        space();
        i++; // ':'
        const v = value();
        if (!(firstKeyWins && Object.hasOwn(out, key))) out[key] = v;
        space();
        if (text[i++] === '}') return out;
      }
    }
    if (c === '[') {
      i++;
      const out: unknown[] = [];
      space();
      if (text[i] === ']') {
        i++;
        return out;
      }
      for (;;) {
        out.push(value());
        space();
        if (text[i++] === ']') return out;
      }
    }
    const start = i;
    if (c === '"') {
      i++;
      while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i++;
    } else while (i < text.length && !',}] \t\n\r'.includes(text[i] as string)) i++;
    return JSON.parse(text.slice(start, i));
  };
  const result = value();
  space();
  if (i !== text.length) throw new SyntaxError('trailing text');
  return result;
}
