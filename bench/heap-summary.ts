/**
 * A heap snapshot summed by what holds the bytes (issue 27: bytes per state): for each kind of
 * node (objects by constructor, strings, arrays, the maps' backing tables, numbers…) its count
 * and self size, largest first.
 *
 *   node dist/bench/heap-summary.js FILE.heapsnapshot [rows]
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
}

function main(): void {
  const [file, rows = '30'] = process.argv.slice(2);
  const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const [iType, iName, iSize] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const sums = new Map<string, { count: number; bytes: number }>();
  let total = 0;
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + iType]];
    const size = snap.nodes[i + iSize];
    // Objects by constructor; strings, code and the rest by their type (their names are contents).
    const what = type === 'object' || type === 'array' || type === 'hidden' || type === 'native' ? `${type} ${snap.strings[snap.nodes[i + iName]].slice(0, 60)}` : type;
    const s = sums.get(what) ?? { count: 0, bytes: 0 };
    s.count++;
    s.bytes += size;
    total += size;
    sums.set(what, s);
  }
  console.log(`total ${(total / 2 ** 20).toFixed(1)} MiB in ${snap.nodes.length / width} nodes`);
  for (const [what, s] of [...sums].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, Number(rows))) {
    console.log(`${(s.bytes / 2 ** 20).toFixed(1).padStart(8)} MiB ${String(s.count).padStart(9)}  ${(s.bytes / s.count).toFixed(0).padStart(6)} B  ${what}`);
  }
}

main();
