/** The checks by which an early start is matched with the start the program asks for. */

export function sameArray(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((item, index) => item === b[index]);
}

type Env = Readonly<Record<string, string | undefined>>;

/** The same variables with the same values; a variable set to undefined counts as absent. */
export function sameRecord(a: Env | undefined, b: Env | undefined): boolean {
  const left = Object.entries(a ?? {}).filter(([, value]) => value !== undefined);
  const right = Object.entries(b ?? {}).filter(([, value]) => value !== undefined);
  return (
    left.length === right.length &&
    left.every(([key, value]) => Object.hasOwn(b ?? {}, key) && b?.[key] === value)
  );
}
