/**
 * Writing the service's inventory in the format `hilt import` reads (YAML by default, or CSV),
 * secrets left out (the API never returns them). An SSH switch's host key fingerprint is written
 * as its `host_key` field, so that an import of the export pins it again. Sorted by name, so that
 * an export of an import of an export is the same file.
 */
import { stringify as yamlText } from 'yaml';
import { stringify as csvText } from 'csv-stringify/sync';
import { CSV_COLUMNS, Format } from './parse';
import { OBM_SCHEMA, ServerInventory, shortType, SWITCH_SCHEMA } from './model';
import { HOST_KEY_FIELD } from '../../../drivers/switch/types';

/** A switch's fields as a file gives them: the driver's, and its host key when it has one. */
const fieldsOf = (s: ServerInventory['switches'][number]): Record<string, unknown> => ({ ...s.fields, ...(s.host_key ? { [HOST_KEY_FIELD]: s.host_key } : {}) });

export function writeInventory(inv: ServerInventory, format: Format): string {
  return format === 'csv' ? toCsv(inv) : toYaml(inv);
}

function toYaml(inv: ServerInventory): string {
  const doc = {
    switches: inv.switches.map((s) => ({ name: s.name, type: shortType(SWITCH_SCHEMA, s.type), ...fieldsOf(s), ports: s.ports })),
    nodes: inv.nodes.map((n) => ({
      name: n.name,
      obm: { type: shortType(OBM_SCHEMA, n.obm.type), ...n.obm.fields },
      ...(Object.keys(n.metadata).length ? { metadata: n.metadata } : {}),
      nics: n.nics.map((x) => ({ name: x.name, macaddr: x.macaddr, ...(x.switch ? { switch: x.switch, port: x.port } : {}) })),
    })),
  };
  return `# hilt inventory (hilt import reads it; secrets are left out: docs/import.md)\n${yamlText(doc, { lineWidth: 0 })}`;
}

/**
 * A row per nic; a node without nics and an unwired port get a row of their own. A node's BMC
 * fields and metadata, and a switch's fields, are written on the first row of each.
 */
function toCsv(inv: ServerInventory): string {
  const obmFields = [...new Set(inv.nodes.flatMap((n) => Object.keys(n.obm.fields)))].sort();
  const swFields = [...new Set(inv.switches.flatMap((s) => Object.keys(fieldsOf(s))))].sort();
  const labels = [...new Set(inv.nodes.flatMap((n) => Object.keys(n.metadata)))].sort();
  const head = [...CSV_COLUMNS, 'obm.type', ...obmFields.map((f) => `obm.${f}`), 'switch.type', ...swFields.map((f) => `switch.${f}`), ...labels.map((l) => `metadata.${l}`)];
  const rows: string[][] = [];
  const described = new Set<string>();
  const switchCells = (sw: string | null) => {
    if (!sw || described.has(sw)) return ['', ...swFields.map(() => '')];
    described.add(sw);
    const s = inv.switches.find((x) => x.name === sw);
    const fields = s ? fieldsOf(s) : {};
    return [s ? shortType(SWITCH_SCHEMA, s.type) : '', ...swFields.map((f) => (fields[f] === undefined ? '' : String(fields[f])))];
  };
  const wired = new Set<string>();
  for (const n of inv.nodes) for (const x of n.nics) if (x.switch && x.port) wired.add(`${x.switch}\0${x.port}`);
  for (const s of inv.switches) {
    const free = s.ports.filter((p) => !wired.has(`${s.name}\0${p}`));
    // A switch none of whose ports is wired is described on a row of its own.
    if (!free.length && !inv.nodes.some((n) => n.nics.some((x) => x.switch === s.name))) rows.push(['', '', '', s.name, '', '', ...obmFields.map(() => ''), ...switchCells(s.name), ...labels.map(() => '')]);
    for (const p of free) rows.push(['', '', '', s.name, p, '', ...obmFields.map(() => ''), ...switchCells(s.name), ...labels.map(() => '')]);
  }
  for (const n of inv.nodes) {
    const nodeCells = [shortType(OBM_SCHEMA, n.obm.type), ...obmFields.map((f) => (n.obm.fields[f] === undefined ? '' : String(n.obm.fields[f])))];
    // Own labels only: a label such as `constructor` that this node lacks is no value of it.
    const meta = labels.map((l) => (Object.hasOwn(n.metadata, l) && n.metadata[l] !== undefined ? String(n.metadata[l]) : ''));
    const nics = n.nics.length ? n.nics : [null];
    nics.forEach((x, i) => {
      const first = i === 0;
      rows.push([n.name, x?.name ?? '', x?.macaddr ?? '', x?.switch ?? '', x?.port ?? '',
        ...(first ? nodeCells : nodeCells.map(() => '')), ...switchCells(x?.switch ?? null), ...(first ? meta : meta.map(() => ''))]);
    });
  }
  // A reader trims what no quotes protect (src/cli/inventory/parse.ts): a name or value with a
  // space at either end is quoted, so that it reads back as it is.
  return csvText([head, ...rows], { quoted_match: /^\s|\s$/ });
}
