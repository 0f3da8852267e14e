/**
 * Seeded property runs: each case gets its own seed (base + index), so a failure names the one
 * seed that replays it. The base is PROPERTY_SEED when set, otherwise fresh for every run.
 */
export const BASE_SEED = process.env.PROPERTY_SEED
  ? Number(process.env.PROPERTY_SEED)
  : Math.floor(Math.random() * 2 ** 31);

/** A small seeded PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Gen {
  readonly #random: () => number;

  constructor(seed: number) {
    this.#random = rng(seed);
  }

  float(): number {
    return this.#random();
  }

  int(min: number, max: number): number {
    return min + Math.floor(this.#random() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.#random() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.#random() * items.length)] as T;
  }

  /** A string of up to `max` characters, mostly from `mostly`, sometimes from the hostile pools. */
  text(mostly: string, max: number, hostility = 0.1): string {
    let out = '';
    const length = this.int(0, max);
    for (let i = 0; i < length; i++) {
      out += this.chance(hostility) ? this.pick(HOSTILE_CHARS) : mostly[this.int(0, mostly.length - 1)];
    }
    return out;
  }
}

/** Characters that break parsers and headers: controls, CR/LF, DEL, C1, latin-1, BMP, lone surrogates, astral. */
export const HOSTILE_CHARS: readonly string[] = [
  '\x00',
  '\x01',
  '\x07',
  '\t',
  '\n',
  '\r',
  '\r\n',
  '\x1b',
  '\x7f',
  '\x85',
  '\x9b',
  '\xa0',
  '\xff',
  'é',
  'Ā',
  '\u2028',
  '\ufeff',
  '\ud800',
  '\udfff',
  '𝄞',
  ' ',
  ':',
  ',',
  '"',
  '[',
  ']',
  '%',
  '@',
  '/',
  '?',
  '#',
];

export const TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-!#$&'*+.^_`|~";
export const VALUE_CHARS = ' abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-=;,./:()"';

/** Runs `cases` seeded cases; a failure is rethrown with the seed that replays it. */
export async function forAll(
  cases: number,
  check: (gen: Gen, seed: number) => void | Promise<void>,
): Promise<void> {
  for (let i = 0; i < cases; i++) {
    const seed = (BASE_SEED + i) >>> 0;
    try {
      await check(new Gen(seed), seed);
    } catch (error) {
      const message = `property failed for seed ${seed} (replay the run with PROPERTY_SEED=${BASE_SEED}; case ${i})`;
      console.error(message);
      throw new Error(`${message}: ${(error as Error).message}`, { cause: error });
    }
  }
}
