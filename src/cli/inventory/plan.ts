/**
 * Checking an inventory file against the rules and against the running service, before anything
 * changes: names, driver fields and port names (the drivers' own registries, as the service
 * checks them), duplicates, references, and what already exists. The outcome is every problem
 * with its line, or the plan: only what is missing, so that a second run changes nothing.
 *
 * An import only adds: objects of the service that the file does not name are left alone, and
 * an object that exists differently (another BMC, MAC address, type or wiring) is a problem,
 * never changed (there is no call that changes a BMC or a MAC address in place).
 */
import { DriverRegistry } from '../../../drivers/registry';
import { SWITCH_DRIVERS } from '../../../drivers/switch';
import { OBM_DRIVERS } from '../../../drivers/obm';
import { HOST_KEY_FIELD, type SwitchDriverEntry } from '../../../drivers/switch/types';
import { METADATA_MAX_LABELS } from '../../../actors/node/protocol';
import { nameProblem } from '../../schemas/common';
import { SECRET_KEY } from '../../redact';
import { dict } from '../../dict';
import { Inventory, Problem, Scalar, ServerInventory } from './model';

/** What an import does, in the order it does it. */
export interface Plan {
  switches: { name: string; body: Record<string, unknown>; line: number }[];
  ports: { switch: string; port: string; line: number }[];
  nodes: { name: string; body: Record<string, unknown>; line: number }[];
  metadata: { node: string; label: string; value: Scalar; line: number }[];
  nics: { node: string; nic: string; macaddr: string; line: number }[];
  wiring: { switch: string; port: string; node: string; nic: string; line: number }[];
  /** objects the file names that are already there as it says */
  unchanged: number;
}

export const planSize = (p: Plan): number => p.switches.length + p.ports.length + p.nodes.length + p.metadata.length + p.nics.length + p.wiring.length;

/** Secrets for objects a file names without one (an export leaves them out). */
export interface Secrets { bmcPassword?: string; switchPassword?: string }

const switchRegistry = new DriverRegistry<unknown, SwitchDriverEntry>('switch', SWITCH_DRIVERS);
const obmRegistry = new DriverRegistry('OBM', OBM_DRIVERS, { fieldPrefix: 'obm.', typeRequired: true, unexpected: (t, extra) => `unexpected field(s) for ${t}: ${extra.join(', ')}` });

const withoutSecrets = (fields: Record<string, unknown>) => Object.fromEntries(Object.entries(fields).filter(([k]) => !SECRET_KEY.test(k)));
const same = (a: Record<string, unknown>, b: Record<string, unknown>) => {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && String(a[k]) === String(b[k]));
};
const describe = (f: Record<string, unknown>) => Object.entries(f).map(([k, v]) => `${k}=${String(v)}`).join(', ');
/** A CSV gives every field as text: a field the driver wants as a number or a boolean is converted. */
function typed(schema: object, fields: Record<string, unknown>): Record<string, unknown> {
  const props = (schema as { properties?: Record<string, { type?: string | string[] }> }).properties ?? {};
  // No prototype: a field named `__proto__` stays a field, which the driver's check refuses.
  const out = dict<unknown>();
  for (const [k, v] of Object.entries(fields)) {
    const t = props[k]?.type;
    const types = Array.isArray(t) ? t : [t];
    if (typeof v === 'string' && !types.includes('string') && (types.includes('integer') || types.includes('number')) && /^-?\d+(\.\d+)?$/.test(v)) out[k] = Number(v);
    else if (typeof v === 'string' && !types.includes('string') && types.includes('boolean') && (v === 'true' || v === 'false')) out[k] = v === 'true';
    else out[k] = v;
  }
  return out;
}

export function plan(inv: Inventory, server: ServerInventory, secrets: Secrets): { plan: Plan; problems: Problem[] } {
  const problems: Problem[] = [];
  const p: Plan = { switches: [], ports: [], nodes: [], metadata: [], nics: [], wiring: [], unchanged: 0 };
  const bad = (line: number, message: string) => problems.push({ line, message });
  const checkName = (kind: string, n: string, line: number) => {
    const why = nameProblem(n);
    if (why) bad(line, `${kind} name ${JSON.stringify(n)} ${why}`);
    return !why;
  };

  const serverSwitches = new Map(server.switches.map((s) => [s.name, s]));
  const serverNodes = new Map(server.nodes.map((n) => [n.name, n]));
  /** `switch\0port` → the nic wired to it on the service */
  const wiredOnServer = new Map<string, string>();
  for (const n of server.nodes) for (const x of n.nics) if (x.switch && x.port) wiredOnServer.set(`${x.switch}\0${x.port}`, `nic ${x.name} of node ${n.name}`);

  // Switches: the file's, then those of the service that nics may name.
  const switchTypes = new Map<string, string>();
  for (const s of server.switches) switchTypes.set(s.name, s.type);
  const seenSwitch = new Map<string, number>();
  /** the ports the file names per switch, with the line that first named each */
  const filePorts = new Map<string, Map<string, number>>();
  const portsOf = (sw: string) => filePorts.get(sw) ?? filePorts.set(sw, new Map()).get(sw)!;
  for (const s of inv.switches) {
    if (!checkName('switch', s.name, s.line)) continue;
    if (seenSwitch.has(s.name)) {
      bad(s.line, `switch ${s.name} is also on line ${seenSwitch.get(s.name)}`);
      continue;
    }
    seenSwitch.set(s.name, s.line);
    const onServer = serverSwitches.get(s.name);
    if (!s.type) bad(s.line, `switch ${s.name}: its type is missing`);
    else if (onServer) {
      const given = withoutSecrets(s.fields);
      // The service keeps a pinned SSH host key beside the driver fields (as its host key, not a
      // field): compared when the file gives one; a file without one leaves the switch's alone.
      const had = given[HOST_KEY_FIELD] === undefined ? onServer.fields : { ...onServer.fields, [HOST_KEY_FIELD]: onServer.host_key ?? 'none' };
      if (onServer.type !== s.type) bad(s.line, `switch ${s.name} exists with type ${onServer.type}, not ${s.type} (an import does not change a switch)`);
      else if (!same(typed(switchRegistry.get(s.type)?.fields ?? {}, given), had)) bad(s.line, `switch ${s.name} exists with ${describe(had)}, not ${describe(given)} (an import does not change a switch)`);
      else p.unchanged++;
    } else {
      const entry = switchRegistry.get(s.type);
      const fields = typed(entry?.fields ?? {}, { ...s.fields });
      const wantsPassword = !!entry && fields.password === undefined && 'password' in ((entry.fields as { properties?: object }).properties ?? {});
      const missing = wantsPassword && secrets.switchPassword === undefined;
      if (missing) bad(s.line, `switch ${s.name}: its password is missing (an export leaves secrets out: add it, or set HILT_IMPORT_SWITCH_PASSWORD)`);
      else if (wantsPassword) fields.password = secrets.switchPassword;
      const v = missing ? { type: s.type, fields } : switchRegistry.validate({ type: s.type, ...fields });
      if (typeof v === 'string') bad(s.line, `switch ${s.name}: ${v}`);
      else p.switches.push({ name: s.name, body: { type: s.type, ...fields }, line: s.line });
    }
    // A switch entry without a type is a problem above; it never hides a registered switch's type.
    if (s.type) switchTypes.set(s.name, s.type);
    for (const port of s.ports) {
      const ports = portsOf(s.name);
      if (ports.has(port)) bad(s.line, `switch ${s.name}: port ${port} is listed twice`);
      else ports.set(port, s.line);
    }
  }

  // Ports of switches the file names without describing them: registered ones.
  for (const r of inv.ports) {
    if (!checkName('switch', r.switch, r.line)) continue;
    if (!switchTypes.has(r.switch)) bad(r.line, `port ${r.port}: switch ${r.switch} is neither in the file nor registered`);
    else if (!portsOf(r.switch).has(r.port)) portsOf(r.switch).set(r.port, r.line);
  }

  // Nodes and their nics.
  const seenNode = new Map<string, number>();
  /** `switch\0port` → the nic the file wires to it, and its line */
  const wiredInFile = new Map<string, { what: string; line: number }>();
  for (const n of inv.nodes) {
    if (!checkName('node', n.name, n.line)) continue;
    if (seenNode.has(n.name)) {
      bad(n.line, `node ${n.name} is also on line ${seenNode.get(n.name)}`);
      continue;
    }
    seenNode.set(n.name, n.line);
    const onServer = serverNodes.get(n.name);
    // The service refuses a node's labels beyond the limit (node_register 400, node_set_metadata 409).
    const labels = new Set([...Object.keys(onServer?.metadata ?? {}), ...Object.keys(n.metadata)]).size;
    if (labels > METADATA_MAX_LABELS) bad(n.line, `node ${n.name}: ${labels} metadata labels, more than a node may have (${METADATA_MAX_LABELS})`);
    if (!n.obm.type) bad(n.line, `node ${n.name}: its BMC type (obm.type) is missing`);
    else if (onServer) {
      const given = withoutSecrets(n.obm.fields);
      if (onServer.obm.type !== n.obm.type || !same(given, onServer.obm.fields)) {
        bad(n.line, `node ${n.name} exists with BMC ${onServer.obm.type} ${describe(onServer.obm.fields)}, not ${n.obm.type} ${describe(given)} (an import does not change a BMC)`);
      } else p.unchanged++;
      for (const [label, value] of Object.entries(n.metadata)) {
        if (!checkName('metadata label', label, n.line)) continue;
        const now = Object.hasOwn(onServer.metadata, label) ? onServer.metadata[label] : undefined;
        if (n.metadataText ? String(now) !== String(value) : now !== value) p.metadata.push({ node: n.name, label, value, line: n.line });
      }
    } else {
      const fields = typed(obmRegistry.get(n.obm.type)?.fields ?? {}, { ...n.obm.fields });
      const missing = fields.password === undefined && secrets.bmcPassword === undefined;
      if (missing) bad(n.line, `node ${n.name}: its BMC password (obm.password) is missing (an export leaves secrets out: add it, or set HILT_IMPORT_BMC_PASSWORD)`);
      else if (fields.password === undefined) fields.password = secrets.bmcPassword;
      const v = missing ? null : obmRegistry.validate({ type: n.obm.type, ...fields });
      if (typeof v === 'string') bad(n.line, `node ${n.name}: ${v}`);
      for (const label of Object.keys(n.metadata)) checkName('metadata label', label, n.line);
      p.nodes.push({ name: n.name, body: { obm: { type: n.obm.type, ...fields }, ...(Object.keys(n.metadata).length ? { metadata: n.metadata } : {}) }, line: n.line });
    }
    const serverNics = new Map((onServer?.nics ?? []).map((x) => [x.name, x]));
    const seenNic = new Map<string, number>();
    for (const x of n.nics) {
      const what = `nic ${x.name} of node ${n.name}`;
      if (!checkName('nic', x.name, x.line)) continue;
      if (seenNic.has(x.name)) {
        bad(x.line, `${what} is also on line ${seenNic.get(x.name)}`);
        continue;
      }
      seenNic.set(x.name, x.line);
      const had = serverNics.get(x.name);
      if (had && had.macaddr !== x.macaddr) bad(x.line, `${what} exists with MAC address ${had.macaddr}, not ${x.macaddr} (an import does not change a nic)`);
      else if (had) p.unchanged++;
      else p.nics.push({ node: n.name, nic: x.name, macaddr: x.macaddr, line: x.line });
      if ((x.switch === null) !== (x.port === null)) {
        bad(x.line, `${what}: give both its switch and its port, or neither`);
        continue;
      }
      if (x.switch === null || x.port === null) continue;
      const type = switchTypes.get(x.switch);
      if (!type) {
        bad(x.line, `${what}: switch ${x.switch} is neither in the file nor registered`);
        continue;
      }
      const key = `${x.switch}\0${x.port}`;
      const twice = wiredInFile.get(key);
      if (twice) {
        bad(x.line, `${what}: port ${x.port} of switch ${x.switch} is already wired to ${twice.what} on line ${twice.line}`);
        continue;
      }
      wiredInFile.set(key, { what, line: x.line });
      if (!portsOf(x.switch).has(x.port)) portsOf(x.switch).set(x.port, x.line);
      const serverWire = had ? { switch: had.switch, port: had.port } : null;
      const portHolder = wiredOnServer.get(key);
      if (serverWire?.switch === x.switch && serverWire.port === x.port) p.unchanged++;
      else if (serverWire?.switch) bad(x.line, `${what} is wired to port ${serverWire.port} of switch ${serverWire.switch}, not ${x.port} of ${x.switch} (an import does not move a cable)`);
      else if (portHolder) bad(x.line, `${what}: port ${x.port} of switch ${x.switch} is wired to ${portHolder} already`);
      else p.wiring.push({ switch: x.switch, port: x.port, node: n.name, nic: x.name, line: x.line });
    }
  }

  // Ports: those the file names (listed, or wired to a nic) that the service lacks.
  for (const [sw, ports] of filePorts) {
    const type = switchTypes.get(sw);
    const entry = type ? switchRegistry.get(type) : undefined;
    const existing = new Set(serverSwitches.get(sw)?.ports ?? []);
    for (const [port, line] of ports) {
      if (!checkName('port', port, line)) continue;
      if (existing.has(port)) {
        p.unchanged++;
        continue;
      }
      if (entry && !entry.portName.test(port)) bad(line, `port ${port} of switch ${sw}: not a port name of ${type} (${entry.portFormat})`);
      else p.ports.push({ switch: sw, port, line });
    }
  }
  problems.sort((a, b) => a.line - b.line);
  return { plan: p, problems };
}
