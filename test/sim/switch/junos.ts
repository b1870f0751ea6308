/**
 * Juniper Junos (EX/QFX with ELS) as seen over SSH, for the `junos` driver: `user@switch>`,
 * `configure [private|exclusive]` into `[edit]` / `user@switch#`, a candidate configuration of
 * the session's own (discarded when it ends or at `rollback 0`), `set`/`delete` of the
 * statements a driver uses, `commit [and-quit]` with its check (a VLAN member that is not
 * defined, two VLANs with one id, an access port with two members) and Junos' error block,
 * `exit` asking about uncommitted changes, `run`, `| display set`, `| match`, `| no-more`, `set cli
 * screen-length 0` (else the `---(more)---` pager), and `syntax error.` / `unknown command.` /
 * `Value 4095 is not within range (1..4094) at '4095'` under a caret.
 *
 * The committed configuration is the sim's port state (model.ts SimPort: no `switchport` = no
 * `family ethernet-switching`; an access port of `access`; a trunk's `allowed` members and its
 * `native-vlan-id`, carried untagged only when it is also a member, as on ELS), its VLAN ids
 * (`vlans`) and their names (kept here). A factory port has `family ethernet-switching` and
 * nothing else: an access port of VLAN `default` (1).
 *
 * A port is also a member of a VLAN named under `vlans` (`set vlans <name> interface
 * ge-0/0/1.0`, kept here beside the port state): it carries that VLAN as one of its own members
 * (untagged on an access port), and the commit checks it as one (a VLAN that is not defined,
 * an access port's second member).
 */
import type { CarriedVlans, SimPort } from './model';
import { vlanRange } from './model';
import type { Shell, SwitchSim } from './sim';
import type { SimVendor } from './vendors';

interface JPort { family: boolean; mode: 'access' | 'trunk' | null; members: Set<string>; native: number | null; disable: boolean }
/** VLAN-side memberships: VLAN name → the interfaces named under it, as written (`ge-0/0/1.0`) */
type Ifaces = Map<string, Set<string>>;
interface Candidate { ports: Map<string, JPort>; vlans: Map<string, number>; ifaces: Ifaces; changed: boolean }

/** committed VLAN names by id (the ids are the sim's `vlans`) */
const names = new WeakMap<SwitchSim, Map<number, string>>();
const candidates = new WeakMap<Shell, Candidate>();
/** committed VLAN-side memberships */
const committedIfaces = new WeakMap<SwitchSim, Ifaces>();

function vlanIfaces(sim: SwitchSim): Ifaces {
  let i = committedIfaces.get(sim);
  if (!i) committedIfaces.set(sim, (i = new Map()));
  return i;
}

const copyIfaces = (i: Ifaces): Ifaces => new Map([...i].map(([k, v]) => [k, new Set(v)]));

/** The interfaces of `ifaces` that are `port` (any unit), with the VLAN names they are under. */
const sideOf = (ifaces: Ifaces, port: string) => [...ifaces].filter(([, set]) => [...set].some((i) => i.split('.')[0] === port)).map(([name]) => name);

function vlanNames(sim: SwitchSim): Map<number, string> {
  let n = names.get(sim);
  if (!n) {
    n = new Map([...sim.vlans].map((v) => [v, v === 1 ? 'default' : `vlan${v}`]));
    names.set(sim, n);
  }
  return n;
}

/** Make `iface` (`ge-0/0/1.0`) a member of the defined VLAN `name` from the VLAN's side, as an operator would (`set vlans <name> interface <iface>`, committed). */
export function junosVlanInterface(sim: SwitchSim, name: string, iface: string): void {
  if (![...vlanNames(sim)].some(([id, n]) => n === name && sim.vlans.has(id))) throw new Error(`VLAN ${name} is not defined`);
  const i = vlanIfaces(sim);
  i.set(name, new Set([...(i.get(name) ?? []), iface]));
}

/** Define a VLAN on the simulated switch as an operator would (`set vlans <name> vlan-id <id>`, committed). */
export function junosDefineVlan(sim: SwitchSim, name: string, id: number): void {
  vlanNames(sim).set(id, name);
  sim.vlans.add(id);
}

function toJ(p: SimPort, n: Map<number, string>): JPort {
  const name = (v: number) => n.get(v) ?? String(v);
  const disable = p.shutdown;
  if (!p.switchport) return { family: false, mode: null, members: new Set(), native: null, disable };
  if (p.mode === 'access') return { family: true, mode: null, members: new Set(p.access === 1 ? [] : [name(p.access)]), native: null, disable };
  return { family: true, mode: 'trunk', members: new Set(p.allowed === 'all' ? ['all'] : [...p.allowed].map(name)), native: typeof p.native === 'number' ? p.native : null, disable };
}

function fresh(sim: SwitchSim): Candidate {
  const n = vlanNames(sim);
  return {
    ports: new Map([...sim.ports].map(([k, p]) => [k, toJ(p, n)])),
    vlans: new Map([...n].filter(([id]) => sim.vlans.has(id)).map(([id, name]) => [name, id])),
    ifaces: copyIfaces(vlanIfaces(sim)),
    changed: false,
  };
}

const ES = ['unit', '0', 'family', 'ethernet-switching'];

export class Junos implements SimVendor {
  readonly name = 'Juniper Junos (ELS)';
  readonly hostname = 'switch';
  readonly inbandLogin = false;
  readonly privilegedAtLogin = true;
  readonly pager = '---(more)---';
  readonly factoryVlans = '1';
  readonly banner = '--- JUNOS 21.4R3.15 Kernel 64-bit  JNPR-12.1-20221221.5e7a6a1_buil\n';
  readonly portNames = [
    ...Array.from({ length: 48 }, (_, i) => `ge-0/0/${i}`),
    ...Array.from({ length: 4 }, (_, i) => `xe-0/1/${i}`),
    ...Array.from({ length: 2 }, (_, i) => `et-0/2/${i}`),
  ];

  canonical(typed: string): string | null {
    const m = /^((?:ge|xe|et|mge)-\d+\/\d+\/\d+(?::\d+)?)(?:\.0)?$/.exec(typed.trim());
    return m ? m[1]! : null;
  }

  newPort(): SimPort {
    return { switchport: true, mode: 'access', access: 1, native: 'none', allowed: new Set(), shutdown: false };
  }

  carried(sim: SwitchSim, p: SimPort): CarriedVlans {
    const port = [...sim.ports].find(([, q]) => q === p)?.[0];
    const ids = new Map([...vlanNames(sim)].map(([id, n]) => [n, id]));
    const side = p.lag || !port ? [] : sideOf(vlanIfaces(sim), port).map((n) => ids.get(n)!);
    if (!p.switchport || p.mode === 'access') {
      // an access port without members of its own is in VLAN default, unless in one from the VLAN's side
      const access = p.switchport && (p.access !== 1 || !side.length) ? p.access : side[0];
      return { native: access ?? null, tagged: [] };
    }
    const members = [...new Set([...(p.allowed === 'all' ? [...sim.vlans] : [...p.allowed]), ...side])];
    const native = typeof p.native === 'number' && members.includes(p.native) ? p.native : null;
    return { native, tagged: members.filter((v) => v !== native).sort((a, b) => a - b) };
  }

  prompt(h: string, mode: string, _iface: string, _vlan: number, user: string): string {
    return mode === 'config' ? `\n[edit]\n${user}@${h}# ` : `${user}@${h}> `;
  }

  changing(_sh: Shell, cmd: string): boolean {
    return /^commit\b/.test(cmd);
  }

  /** The caret under column `col` of the command, then the message. */
  private refuse(sh: Shell, cmd: string, col: number, message: string): void {
    const promptLine = sh.prompt().split('\n').pop()!;
    sh.line(`${' '.repeat(promptLine.length + Math.max(0, Math.min(col, cmd.length)))}^`);
    sh.line(message);
  }

  async command(sh: Shell, line: string): Promise<void | 'logout'> {
    // `| no-more`, `| display set` and `| match <regex>` are the only pipes taken
    // a `|` inside double quotes is the match pattern's (`match "ge-0/0/1|interface-range"`)
    const [cmd, ...pipes] = (line.match(/(?:[^|"]|"[^"]*")+/g) ?? ['']).map((x) => x.trim());
    const t = cmd!.split(/\s+/);
    const noMore = pipes.includes('no-more');
    const displaySet = pipes.includes('display set');
    const m = pipes.map((x) => /^match\s+"?([^"]*)"?$/.exec(x)?.[1]).find((x) => x !== undefined);
    const match = m === undefined ? undefined : new RegExp(m);
    if (sh.mode === 'config') return this.config(sh, cmd!, t, { noMore, displaySet, match });
    return this.operational(sh, cmd!, t, { noMore, displaySet, match });
  }

  private async operational(sh: Shell, cmd: string, t: string[], o: { noMore: boolean; displaySet: boolean; match?: RegExp }): Promise<void | 'logout'> {
    if (t[0] === 'exit' || t[0] === 'quit') return 'logout';
    if (t[0] === 'set' && t[1] === 'cli' && t[2] === 'screen-length' && /^\d+$/.test(t[3] ?? '') && t.length === 4) {
      if (!sh.sim.faults.ignorePagingOff) sh.paging = t[3] !== '0';
      sh.line(`Screen length set to ${t[3]}`);
      return;
    }
    if (t[0] === 'configure') {
      const how = t[1];
      if (t.length > 2 || (how && how !== 'private' && how !== 'exclusive')) return this.refuse(sh, cmd, cmd.indexOf(t[1] ?? ''), 'syntax error.');
      if (how === 'private') sh.line('warning: uncommitted changes will be discarded on exit');
      sh.line('Entering configuration mode');
      candidates.set(sh, fresh(sh.sim));
      sh.mode = 'config';
      return;
    }
    if (t[0] === 'show' && t[1] === 'configuration') {
      if (!o.displaySet) return this.refuse(sh, cmd, cmd.length, 'error: this simulator shows the configuration as set commands only (| display set)');
      const all = this.committed(sh.sim, t.slice(2));
      if (typeof all === 'string') return this.refuse(sh, cmd, cmd.indexOf(all), 'syntax error.');
      const lines = o.match ? all.filter((l) => o.match!.test(l)) : all;
      if (o.noMore) for (const l of lines) sh.line(l);
      else await sh.page(lines);
      return;
    }
    if (t.join(' ') === 'show ethernet-switching table') {
      const n = vlanNames(sh.sim);
      const { macs } = sh.sim.learned();
      const lines = [
        'MAC flags (S - static MAC, D - dynamic MAC, L - locally learned, P - Persistent static',
        '           SE - statistics enabled, NM - non configured MAC, R - remote PE MAC, O - ovsdb MAC)',
        '',
        `Ethernet switching table : ${macs.length} entries, ${macs.length} learned`,
        'Routing instance : default-switch',
        '   Vlan                MAC                 MAC         Age    Logical',
        '   name                address             flags              interface',
        ...macs.map((m) => `   ${(n.get(m.vlan) ?? String(m.vlan)).padEnd(20)}${m.mac.match(/../g)!.join(':').padEnd(20)}D             -   ${m.port}.0`),
      ];
      if (o.noMore) for (const l of lines) sh.line(l);
      else await sh.page(lines);
      return;
    }
    if (t.join(' ') === 'show lldp neighbors') {
      const lines = [`${'Local Interface'.padEnd(19)}${'Parent Interface'.padEnd(20)}${'Chassis Id'.padEnd(20)}${'Port info'.padEnd(20)}System Name`];
      for (const { port, n } of sh.sim.learned().neighbors) lines.push(`${port.padEnd(19)}${'-'.padEnd(20)}${n.chassisId.padEnd(20)}${n.portId.padEnd(20)}${n.systemName ?? ''}`);
      if (o.noMore) for (const l of lines) sh.line(l);
      else await sh.page(lines);
      return;
    }
    return this.refuse(sh, cmd, 0, 'unknown command.');
  }

  /** The committed configuration under `path` (`interfaces <p>`, `vlans`, nothing) as set commands; a word it does not know. */
  private committed(sim: SwitchSim, path: string[]): string[] | string {
    const n = vlanNames(sim);
    const ifaces = vlanIfaces(sim);
    const vlans = [...n].filter(([id]) => sim.vlans.has(id)).sort((a, b) => a[1].localeCompare(b[1])).flatMap(([id, name]) => [
      ...[...(ifaces.get(name) ?? [])].sort().map((i) => `set vlans ${name} interface ${i}`),
      `set vlans ${name} vlan-id ${id}`,
    ]);
    const iface = (name: string) => {
      const sp = sim.ports.get(name)!;
      const j = toJ(sp, n);
      const out: string[] = j.disable ? [`set interfaces ${name} disable`] : [];
      if (sp.lag) return [...out, `set interfaces ${name} ether-options 802.3ad ${sp.lag}`];
      if (!j.family) return out;
      const es = `set interfaces ${name} unit 0 family ethernet-switching`;
      if (j.native !== null) out.push(`set interfaces ${name} native-vlan-id ${j.native}`);
      if (j.mode) out.push(`${es} interface-mode ${j.mode}`);
      for (const m of [...j.members].sort()) out.push(`${es} vlan members ${m}`);
      if (!j.mode && !j.members.size) out.push(es);
      return out;
    };
    if (!path.length) return [...[...sim.ports.keys()].flatMap(iface), ...vlans];
    if (path[0] === 'vlans' && path.length === 1) return vlans;
    if (path[0] === 'interfaces') {
      if (path.length === 1) return [...sim.ports.keys()].flatMap(iface);
      const p = this.canonical(path[1]!);
      if (!p || !sim.ports.has(p) || path.length > 2) return path[1]!;
      return iface(p);
    }
    return path[0]!;
  }

  private async config(sh: Shell, cmd: string, t: string[], o: { noMore: boolean; displaySet: boolean; match?: RegExp }): Promise<void | 'logout'> {
    const c = candidates.get(sh)!;
    if (t[0] === 'run') return this.operational(sh, cmd.replace(/^run\s+/, ''), t.slice(1), o);
    if (t[0] === 'exit' || t[0] === 'quit') {
      if (c.changed) {
        sh.print('Exit with uncommitted changes? [yes,no] (yes) ');
        const answer = (await sh.readLine()).trim();
        if (answer && answer !== 'yes') return;
      }
      candidates.delete(sh);
      sh.line('Exiting configuration mode');
      sh.mode = 'exec';
      return;
    }
    if (t[0] === 'rollback' && (t[1] === '0' || t[1] === undefined) && t.length <= 2) {
      candidates.set(sh, fresh(sh.sim));
      sh.line('load complete');
      return;
    }
    if (t[0] === 'commit' && (t.length === 1 || (t.length === 2 && t[1] === 'and-quit'))) {
      if (sh.sim.opts.commitDelayMs) await new Promise((r) => setTimeout(r, sh.sim.opts.commitDelayMs));
      return this.commit(sh, c, t[1] === 'and-quit');
    }
    if (sh.sim.faults.failConfig && (t[0] === 'set' || t[0] === 'delete')) {
      sh.line('error: permission denied: the user\'s class may not change this part of the configuration');
      return;
    }
    if (t[0] === 'set' || t[0] === 'delete') return this.edit(sh, c, cmd, t[0] === 'set', t.slice(1));
    return this.refuse(sh, cmd, 0, 'syntax error.');
  }

  private edit(sh: Shell, c: Candidate, cmd: string, set: boolean, a: string[]): void {
    const bad = (i: number) => this.refuse(sh, cmd, cmd.indexOf(a[i] ?? '', cmd.indexOf(' ')), 'syntax error.');
    // a number out of its range: the caret under it, and Junos' own words (no `error:` prefix)
    const range = (i: number) => this.refuse(sh, cmd, cmd.lastIndexOf(a[i]!), `Value ${a[i]} is not within range (1..4094) at '${a[i]}'`);
    const vlanId = (i: number) => /^\d+$/.test(a[i] ?? '') && (Number(a[i]) < 1 || Number(a[i]) > 4094);
    const notFound = () => sh.line('warning: statement not found');
    if (a[0] === 'vlans') {
      const name = a[1];
      if (!name) return bad(1);
      if (a[2] === 'interface') {
        const iface = a[3] ?? '';
        if (!this.canonical(iface) || !c.ports.has(this.canonical(iface)!) || a.length !== 4) return bad(3);
        const set_ = c.ifaces.get(name) ?? new Set<string>();
        if (set) {
          set_.add(iface);
          c.ifaces.set(name, set_);
        } else if (!set_.delete(iface)) return notFound();
        c.changed = true;
        return;
      }
      if (set) {
        if (a[2] === 'vlan-id' && a.length === 4 && vlanId(3)) return range(3);
        if (a[2] !== 'vlan-id' || !/^\d+$/.test(a[3] ?? '') || a.length !== 4) return bad(2);
        c.vlans.set(name, Number(a[3]));
      } else if (a.length !== 2) return bad(2);
      else if (!c.vlans.delete(name)) return notFound();
      // the VLAN's statements go with it
      else c.ifaces.delete(name);
      c.changed = true;
      return;
    }
    if (a[0] !== 'interfaces') return bad(0);
    const name = this.canonical(a[1] ?? '');
    const p = name ? c.ports.get(name) : undefined;
    if (!p) return bad(1);
    const rest = a.slice(2);
    if (rest[0] === 'native-vlan-id') {
      if (set) {
        if (rest.length === 2 && vlanId(3)) return range(3);
        if (!/^\d+$/.test(rest[1] ?? '') || rest.length !== 2) return bad(3);
        p.native = Number(rest[1]);
      } else if (p.native === null) return notFound();
      else p.native = null;
      c.changed = true;
      return;
    }
    if (rest[0] === 'disable' && rest.length === 1) {
      if (sh.sim.faults.ignoreChanges && set) {
        sh.sim.faults.ignoreChanges--;
        return;
      }
      if (!set && !p.disable) return notFound();
      p.disable = set;
      c.changed = true;
      return;
    }
    if (ES.some((w, i) => rest[i] !== w)) return bad(2);
    const leaf = rest.slice(4);
    if (sh.sim.faults.ignoreChanges && set) {
      sh.sim.faults.ignoreChanges--;
      return;
    }
    if (!leaf.length) {
      if (set) p.family = true;
      else if (!p.family) return notFound();
      else Object.assign(p, { family: false, mode: null, members: new Set() });
      c.changed = true;
      return;
    }
    if (leaf[0] === 'interface-mode') {
      if (set) {
        if ((leaf[1] !== 'trunk' && leaf[1] !== 'access') || leaf.length !== 2) return bad(7);
        Object.assign(p, { family: true, mode: leaf[1] });
      } else if (!p.mode) return notFound();
      else p.mode = null;
      c.changed = true;
      return;
    }
    if (leaf[0] === 'vlan' && leaf[1] === 'members') {
      const m = leaf[2];
      if (set) {
        if (!m || leaf.length !== 3) return bad(8);
        p.family = true;
        p.members.add(m);
      } else if (!m) {
        if (!p.members.size) return notFound();
        p.members.clear();
      } else if (!p.members.delete(m)) return notFound();
      c.changed = true;
      return;
    }
    return bad(6);
  }

  private commit(sh: Shell, c: Candidate, quit: boolean): void {
    const errors: string[][] = [];
    const ids = new Map<number, string>();
    for (const [name, id] of c.vlans) {
      if (ids.has(id)) errors.push(['[edit vlans]', `  '${name}'`, `    l2ald: Duplicate vlan-id exists for vlan ${ids.get(id)}`]);
      ids.set(id, name);
    }
    const resolve = (m: string): number[] | null => {
      if (m === 'all') return [];
      if (c.vlans.has(m)) return [c.vlans.get(m)!];
      if (/^\d+(-\d+)?$/.test(m)) {
        const list = vlanRange(m);
        return list.every((v) => ids.has(v)) ? list : null;
      }
      return null;
    };
    for (const [vlan, set] of c.ifaces) {
      if (set.size && !c.vlans.has(vlan)) errors.push([`[edit vlans ${vlan}]`, `  'interface ${[...set][0]}'`, `    Vlan ${vlan} is not defined (no vlan-id)`]);
    }
    for (const [name, p] of c.ports) {
      for (const m of p.members) {
        if (!resolve(m)) errors.push([`[edit interfaces ${name} unit 0 family ethernet-switching vlan]`, `  'members ${m}'`, `    Vlan ${m} is not defined`]);
      }
      if (p.mode !== 'trunk' && p.members.size + sideOf(c.ifaces, name).length > 1) errors.push([`[edit interfaces ${name} unit 0 family ethernet-switching]`, "  'interface-mode'", `    Access interface <${name}.0> has more than one vlan member`]);
    }
    if (sh.sim.faults.failCommit) errors.push(['[edit interfaces]', "  'ge-0/0/0'", '    HA commit check failed: configuration database is being modified (simulated fault)']);
    if (errors.length) {
      for (const e of errors) for (const l of e) sh.line(l);
      sh.line('error: configuration check-out failed');
      return;
    }
    const sim = sh.sim;
    const n = vlanNames(sim);
    n.clear();
    sim.vlans.clear();
    for (const [name, id] of c.vlans) {
      n.set(id, name);
      sim.vlans.add(id);
    }
    committedIfaces.set(sim, new Map([...c.ifaces].filter(([, set]) => set.size).map(([k, v]) => [k, new Set(v)])));
    for (const [name, j] of c.ports) {
      const members = [...j.members].flatMap((m) => resolve(m)!);
      const all = j.members.has('all');
      const shutdown = j.disable;
      const lag = sim.ports.get(name)!.lag;
      sim.ports.set(name, lag ? { ...sim.ports.get(name)!, shutdown } : !j.family
        ? { switchport: false, mode: 'access', access: 1, native: 'none', allowed: new Set(), shutdown }
        : j.mode === 'trunk'
          ? { switchport: true, mode: 'trunk', access: 1, native: j.native ?? 'none', allowed: all ? 'all' : new Set(members), shutdown }
          : { switchport: true, mode: 'access', access: members[0] ?? 1, native: 'none', allowed: new Set(), shutdown });
    }
    if (c.changed) sim.commits++;
    candidates.set(sh, fresh(sim));
    sh.line('configuration check succeeds');
    sh.line('commit complete');
    if (quit) {
      sh.line('Exiting configuration mode');
      candidates.delete(sh);
      sh.mode = 'exec';
    }
  }
}
