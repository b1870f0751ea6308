/**
 * Reading an inventory file: YAML (the `yaml` package, which keeps each node's position) or CSV
 * (`csv-parse`, a row per nic), into the model with the line of each object. Only the shape is
 * checked here; src/cli/inventory/check.ts checks names, drivers and references.
 */
import { Alias, isAlias, isMap, isPair, isScalar as isYamlScalar, isSeq, LineCounter, parseDocument, visit, Node as YamlNode, YAMLMap } from 'yaml';
import { parse as parseCsv } from 'csv-parse/sync';
import { dict } from '../../dict';
import { SECRET_KEY } from '../../redact';
import { fullType, Inventory, InventoryErrors, NicSpec, NodeSpec, OBM_SCHEMA, PortRef, Problem, Scalar, SWITCH_SCHEMA, SwitchSpec } from './model';

export type Format = 'yaml' | 'csv';

export const formatOf = (file: string, given?: string): Format => (given === 'csv' || given === 'yaml' ? given : /\.csv$/i.test(file) ? 'csv' : 'yaml');

const isScalar = (v: unknown): v is Scalar => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean';

export function parseInventory(text: string, format: Format, file: string): Inventory {
  return format === 'csv' ? fromCsv(text, file) : fromYaml(text, file);
}

// ---------------------------------------------------------------- YAML

function fromYaml(text: string, file: string): Inventory {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  const problems: Problem[] = [];
  const lineOf = (n: YamlNode | null | undefined) => (n?.range ? lc.linePos(n.range[0]).line : 0);
  for (const e of doc.errors) problems.push({ line: lc.linePos(e.pos[0]).line, message: `not YAML: ${e.message.split('\n')[0]}` });
  if (problems.length) throw new InventoryErrors(file, problems);
  const inv: Inventory = { switches: [], nodes: [], ports: [] };
  // An alias (`obm: *bmc`) stands for its anchor's node: the last one of its name before it, as
  // YAML says; found in one pass, not by the library's search of the whole file per alias.
  const anchors = new Map<string, YamlNode>();
  const targets = new Map<Alias, YamlNode>();
  visit(doc, {
    Node: (k, node, path) => {
      if (isAlias(node)) {
        const t = anchors.get(node.source);
        if (t) targets.set(node, t);
        else {
          // An unquoted password that begins with `*` reads as an alias: its name is not printed then.
          const parent = path[path.length - 1];
          const key = k === 'value' && isPair(parent) ? String((parent.key as { value?: unknown } | null)?.value ?? parent.key) : '';
          problems.push({
            line: lineOf(node),
            message: SECRET_KEY.test(key)
              ? `the value of ${key} is an alias (it begins with *) that refers to no anchor before it: quote a value that begins with *`
              : `the alias *${node.source} refers to no anchor before it`,
          });
        }
      } else if (node.anchor) anchors.set(node.anchor, node as YamlNode);
    },
  });
  if (problems.length) throw new InventoryErrors(file, problems);
  const deref = <T>(n: T): T => (isAlias(n) ? (targets.get(n) as T) : n);
  // What aliases may expand to is bounded by the file's size (aliases of aliases grow without end).
  let budget = 50 * text.length + 100_000;
  const expands = new Error('expands');
  /** A node's plain value (maps without a prototype: `__proto__` is a key as any other). */
  const plain = (n: unknown, inside: Set<unknown>): unknown => {
    n = deref(n);
    if (--budget < 0 || inside.has(n)) throw expands;
    if (isYamlScalar(n)) return n.value;
    inside.add(n);
    try {
      if (isSeq(n)) return n.items.map((x) => plain(x, inside));
      if (isMap(n)) {
        const out = dict<unknown>();
        for (const pair of n.items) if (isPair(pair)) out[String(plain(pair.key, inside))] = plain(pair.value, inside);
        return out;
      }
      return null;
    } finally {
      inside.delete(n);
    }
  };
  const root = doc.contents;
  if (root === null || root === undefined) return inv;
  if (!isMap(root)) throw new InventoryErrors(file, [{ line: lineOf(root), message: 'the file must be a mapping with `switches` and `nodes`' }]);
  for (const pair of root.items) {
    const key = String((pair.key as { value?: unknown })?.value ?? pair.key);
    if (key !== 'switches' && key !== 'nodes') problems.push({ line: lineOf(pair.key as YamlNode), message: `unknown key ${JSON.stringify(key)} (a file has switches and nodes)` });
  }
  const list = (key: string) => {
    const seq = deref(root.get(key, true) as YamlNode | undefined);
    if (seq === undefined || (seq as { value?: unknown }).value === null) return [];
    if (!isSeq(seq)) {
      problems.push({ line: lineOf(seq), message: `${key} must be a list` });
      return [];
    }
    return seq.items as YamlNode[];
  };
  /** One object of a list: a mapping with only the given keys; its plain JSON value. */
  const object = (n: YamlNode, what: string, keys: string[] | null, line: number): Record<string, unknown> | null => {
    if (!isMap(n)) {
      problems.push({ line, message: `${what} must be a mapping` });
      return null;
    }
    let v: Record<string, unknown>;
    try {
      v = plain(n, new Set()) as Record<string, unknown>;
    } catch (err) {
      if (err !== expands) throw err;
      problems.push({ line, message: `${what}: its aliases expand without end (an alias inside its own anchor, or aliases of aliases beyond the file's size)` });
      return null;
    }
    if (keys) for (const k of Object.keys(v)) if (!keys.includes(k)) problems.push({ line, message: `${what}: unknown key ${JSON.stringify(k)} (known: ${keys.join(', ')})` });
    return v;
  };
  /**
   * A text field of the mapping `n` (whose plain value is `v`). A plain scalar that YAML reads as a
   * number (`007`, `001122334455`, `1e5`) is taken as it is written: a name or a MAC address, not 7.
   */
  const str = (v: Record<string, unknown>, k: string, what: string, line: number, n?: YamlNode): string => {
    if (typeof v[k] !== 'string' && typeof v[k] !== 'number') {
      problems.push({ line, message: `${what}: ${k} ${v[k] === undefined ? 'is missing' : 'must be text'}` });
      return '';
    }
    return typeof v[k] === 'number' ? (writtenAs(n, k) ?? String(v[k])) : String(v[k]);
  };
  /** The source text of the plain number `k` of the mapping `n`, if it is one. */
  const writtenAs = (n: YamlNode | undefined, k: string): string | undefined => {
    const s = n && isMap(n) ? deref((n as YAMLMap).get(k, true)) : undefined;
    return isYamlScalar(s) && typeof s.value === 'number' && typeof s.source === 'string' ? s.source : undefined;
  };

  for (const item of list('switches')) {
    const line = lineOf(item);
    const n = deref(item);
    const v = object(n, 'a switch', null, line);
    if (!v) continue;
    const name = str(v, 'name', 'a switch', line, n);
    const what = `switch ${name}`;
    const type = str(v, 'type', what, line, n);
    const { name: _n, type: _t, ports, ...fields } = v;
    if (ports !== undefined && (!Array.isArray(ports) || !ports.every((p) => typeof p === 'string'))) problems.push({ line, message: `${what}: ports must be a list of port names` });
    inv.switches.push({ name, type: type && fullType(SWITCH_SCHEMA, type), fields, ports: Array.isArray(ports) ? ports.map(String) : [], line });
  }
  for (const item of list('nodes')) {
    const line = lineOf(item);
    const n = deref(item);
    const v = object(n, 'a node', ['name', 'obm', 'metadata', 'nics'], line);
    if (!v) continue;
    const name = str(v, 'name', 'a node', line, n);
    const what = `node ${name}`;
    let obm: NodeSpec['obm'] = { type: '', fields: {} };
    if (!v.obm || typeof v.obm !== 'object' || Array.isArray(v.obm)) problems.push({ line, message: `${what}: obm must be a mapping with its type and fields` });
    else {
      const { type, ...fields } = v.obm as Record<string, unknown>;
      if (typeof type !== 'string') problems.push({ line, message: `${what}: obm.type is missing` });
      obm = { type: typeof type === 'string' ? fullType(OBM_SCHEMA, type) : '', fields };
    }
    const metadata = dict<Scalar>();
    if (v.metadata !== undefined && v.metadata !== null) {
      if (typeof v.metadata !== 'object' || Array.isArray(v.metadata)) problems.push({ line, message: `${what}: metadata must be a mapping of labels to values` });
      else {
        for (const [k, x] of Object.entries(v.metadata)) {
          if (isScalar(x)) metadata[k] = x;
          else problems.push({ line, message: `${what}: metadata ${k} must be text, a number or true/false` });
        }
      }
    }
    const nics: NicSpec[] = [];
    const nicNodes = deref((n as YAMLMap).get('nics', true) as YamlNode | undefined);
    if (nicNodes !== undefined && (nicNodes as { value?: unknown }).value !== null) {
      if (!isSeq(nicNodes)) problems.push({ line: lineOf(nicNodes), message: `${what}: nics must be a list` });
      else {
        for (const item of nicNodes.items as YamlNode[]) {
          const xl = lineOf(item);
          const x = deref(item);
          const nv = object(x, `a nic of ${what}`, ['name', 'macaddr', 'switch', 'port'], xl);
          if (!nv) continue;
          const nic = str(nv, 'name', `a nic of ${what}`, xl, x);
          const nw = `nic ${nic} of ${what}`;
          const macaddr = str(nv, 'macaddr', nw, xl, x);
          const sw = nv.switch === undefined || nv.switch === null ? null : (writtenAs(x, 'switch') ?? String(nv.switch));
          const port = nv.port === undefined || nv.port === null ? null : (writtenAs(x, 'port') ?? String(nv.port));
          nics.push({ name: nic, macaddr, switch: sw, port, line: xl });
        }
      }
    }
    inv.nodes.push({ name, obm, metadata, nics, line });
  }
  if (problems.length) throw new InventoryErrors(file, problems);
  return inv;
}

// ---------------------------------------------------------------- CSV

/**
 * A row per nic (a node without nics: one row without a nic; a port without a nic: a row
 * without a node). Columns: node, nic, macaddr, switch, port, and prefixed ones: obm.<field>
 * (obm.type, obm.host, …), switch.<field> (switch.type, switch.hostname, …), metadata.<label>.
 * A node's and a switch's fields may be given on one of its rows and left empty on the others;
 * two rows that give one differently are an error. A switch is described by the rows that give
 * switch.<field> values; a row that only names a switch (and a port) refers to it, described on
 * another row or already registered.
 */
export const CSV_COLUMNS = ['node', 'nic', 'macaddr', 'switch', 'port'];
const PREFIXES = ['obm.', 'switch.', 'metadata.'];

function fromCsv(text: string, file: string): Inventory {
  let records: { record: Record<string, string>; info: { lines: number } }[];
  /** columns named twice: a record keeps one cell of each name, the other would be dropped silently */
  const twice = new Set<string>();
  const columns = (head: string[]) => {
    head.forEach((c, i) => head.indexOf(c) < i && twice.add(c));
    return head;
  };
  try {
    records = parseCsv(text, { columns, info: true, skip_empty_lines: true, trim: true, bom: true }) as typeof records;
  } catch (err) {
    const e = err as Error & { lines?: number };
    // csv-parse quotes what it read of the field (`value is "…"`, `got "…"`): it may be a password.
    const message = e.message.replace(/, value is .*$/s, '').replace(/ got ".*?" at line/, ' at line');
    throw new InventoryErrors(file, [{ line: e.lines ?? 0, message: `not CSV: ${message}` }]);
  }
  const problems: Problem[] = [...twice].map((c) => ({ line: 1, message: `column ${JSON.stringify(c)} is given twice` }));
  if (records.length) {
    for (const col of Object.keys(records[0].record)) {
      if (!CSV_COLUMNS.includes(col) && !PREFIXES.some((p) => col.startsWith(p) && col.length > p.length)) {
        problems.push({ line: 1, message: `unknown column ${JSON.stringify(col)} (known: ${CSV_COLUMNS.join(', ')}, obm.<field>, switch.<field>, metadata.<label>)` });
      }
    }
  }
  if (problems.length) throw new InventoryErrors(file, problems);
  const switches = new Map<string, SwitchSpec>();
  /** the ports of rows without a node, per switch, in the order of the rows */
  const freePorts = new Map<string, PortRef[]>();
  const nodes = new Map<string, NodeSpec>();
  /**
   * Sets what one row gives of an object's fields; a different value than another row gave is an
   * error, which quotes both values unless the field is a secret (a password is printed nowhere).
   */
  const merge = (into: Record<string, unknown>, key: string, value: string, what: string, line: number) => {
    if (value === '') return;
    if (into[key] === undefined || into[key] === value) into[key] = value;
    else if (SECRET_KEY.test(key)) problems.push({ line, message: `${what}: ${key} differs from the one an earlier row gives` });
    else problems.push({ line, message: `${what}: ${key} is ${JSON.stringify(value)} here but ${JSON.stringify(into[key])} on an earlier row` });
  };
  for (const { record: r, info } of records) {
    const line = info.lines;
    const sw = r.switch ?? '';
    if (sw) {
      const given = Object.entries(r).filter(([k, v]) => k.startsWith('switch.') && v !== '');
      let s = switches.get(sw);
      if (!s && given.length) switches.set(sw, (s = { name: sw, type: '', fields: dict(), ports: [], line }));
      if (s) {
        const typed: Record<string, unknown> = { type: s.type || undefined };
        for (const [k, v] of given) {
          const field = k.slice(7);
          if (field === 'type') merge(typed, 'type', fullType(SWITCH_SCHEMA, v), `switch ${sw}`, line);
          else merge(s.fields, field, v, `switch ${sw}`, line);
        }
        s.type = (typed.type as string | undefined) ?? '';
      }
      if (r.port && !r.node) {
        const ports = freePorts.get(sw) ?? freePorts.set(sw, []).get(sw)!;
        if (!ports.some((p) => p.port === r.port)) ports.push({ switch: sw, port: r.port, line });
      }
    } else if (r.port) problems.push({ line, message: `port ${r.port}: the row names no switch` });
    const name = r.node ?? '';
    if (!name) {
      if (r.nic || r.macaddr) problems.push({ line, message: 'a nic without a node: the row names no node' });
      continue;
    }
    let n = nodes.get(name);
    if (!n) nodes.set(name, (n = { name, obm: { type: '', fields: dict() }, metadata: dict(), metadataText: true, nics: [], line }));
    const typed: Record<string, unknown> = { type: n.obm.type || undefined };
    for (const [k, v] of Object.entries(r)) {
      if (k === 'obm.type') merge(typed, 'type', v && fullType(OBM_SCHEMA, v), `node ${name}`, line);
      else if (k.startsWith('obm.')) merge(n.obm.fields, k.slice(4), v, `node ${name}`, line);
      else if (k.startsWith('metadata.')) merge(n.metadata, k.slice(9), v, `node ${name}`, line);
    }
    n.obm.type = (typed.type as string | undefined) ?? '';
    // An empty cell is an empty MAC address (the API takes any text, and an export writes it so).
    if (r.nic && r.macaddr === undefined) problems.push({ line, message: `nic ${r.nic} of node ${name}: macaddr is missing (the file has no macaddr column)` });
    else if (r.nic) n.nics.push({ name: r.nic, macaddr: r.macaddr, switch: sw || null, port: r.port || null, line });
    else if (r.port) problems.push({ line, message: `node ${name}: a port without a nic` });
  }
  if (problems.length) throw new InventoryErrors(file, problems);
  // A free port belongs to its switch's entry when a row describes the switch (before or after).
  const ports: PortRef[] = [];
  for (const [sw, list] of freePorts) {
    const s = switches.get(sw);
    if (s) s.ports.push(...list.map((p) => p.port));
    else ports.push(...list);
  }
  return { switches: [...switches.values()], nodes: [...nodes.values()], ports };
}
