/** VLAN lists in words, as switch CLIs print them: for messages and reports, whatever the driver. */

/** `[2,3,4,5,7]` → `2-5,7`; `[]` → `none`; a list of every VLAN, `all`. Any order, repeats allowed. */
export function formatVlanList(list: Iterable<number> | 'all'): string {
  if (list === 'all') return 'all';
  const xs = [...new Set(list)].sort((a, b) => a - b);
  if (xs.length === 0) return 'none';
  const parts: string[] = [];
  for (let i = 0; i < xs.length; ) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === xs[j]! + 1) j++;
    parts.push(j > i ? `${xs[i]}-${xs[j]}` : `${xs[i]}`);
    i = j + 1;
  }
  return parts.join(',');
}
