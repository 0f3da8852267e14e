/**
 * When two tool names are one name to a person or a model. A client keys tools by the exact string,
 * but whoever reads the list (a model choosing a tool, a user approving one) sees `echo`, `ｅｃｈｏ`
 * (fullwidth), `Echo`, `e\u200Bcho` and `еcho` (Cyrillic е) as the same word. Names with the same
 * skeleton in one listing are therefore as ambiguous as exact duplicates, and a deny rule matches
 * a look-alike of what it names.
 *
 * The skeleton: NFKC (fullwidth, ligatures, compatibility forms), without default-ignorable code
 * points (zero-width spaces and joiners, variation selectors, soft hyphens), lower case, and the
 * Cyrillic, Greek and Armenian letters that look like Latin ones mapped to those (a subset of
 * Unicode's confusables, UTS #39). ASCII look-alikes (`l`/`1`, `o`/`0`) stay apart: tool names in
 * that range are common and distinct on purpose.
 */

const LATIN_LOOKALIKES: Readonly<Record<string, string>> = {
  // Cyrillic
  а: 'a',
  в: 'b',
  с: 'c',
  ԁ: 'd',
  е: 'e',
  ё: 'e',
  һ: 'h',
  і: 'i',
  ї: 'i',
  ј: 'j',
  к: 'k',
  ӏ: 'l',
  м: 'm',
  н: 'h',
  о: 'o',
  р: 'p',
  ԛ: 'q',
  ѕ: 's',
  т: 't',
  у: 'y',
  ԝ: 'w',
  х: 'x',
  // Greek
  α: 'a',
  β: 'b',
  ε: 'e',
  η: 'n',
  ι: 'i',
  κ: 'k',
  ν: 'v',
  ο: 'o',
  ρ: 'p',
  τ: 't',
  υ: 'u',
  χ: 'x',
  // Armenian
  օ: 'o',
  ս: 'u',
  հ: 'h',
  ո: 'n',
};

const IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;
const LOOKALIKE = new RegExp(`[${Object.keys(LATIN_LOOKALIKES).join('')}]`, 'gu');

/** The form under which two tool names read as one. */
export function toolNameSkeleton(name: string): string {
  const folded = name.normalize('NFKC').replace(IGNORABLE, '').toLowerCase().normalize('NFKC');
  return folded.replace(LOOKALIKE, (c) => LATIN_LOOKALIKES[c] as string);
}

/**
 * The names in `names` that share a skeleton with another name of the list or with one in `seen`
 * (the earlier pages of the same listing): every spelling of the collision, exact duplicates too.
 * `seen` maps a skeleton to the exact names it came from, and is updated with this page.
 */
export function ambiguousNames(names: readonly string[], seen: Map<string, Set<string>>): Set<string> {
  const page = new Map<string, string[]>();
  for (const name of names) {
    const skeleton = toolNameSkeleton(name);
    const list = page.get(skeleton);
    if (list) list.push(name);
    else page.set(skeleton, [name]);
  }
  const ambiguous = new Set<string>();
  for (const [skeleton, list] of page) {
    const earlier = seen.get(skeleton);
    if (list.length > 1 || earlier) {
      for (const name of list) ambiguous.add(name);
      for (const name of earlier ?? []) ambiguous.add(name);
    }
    const all = earlier ?? new Set<string>();
    for (const name of list) all.add(name);
    seen.set(skeleton, all);
  }
  return ambiguous;
}
