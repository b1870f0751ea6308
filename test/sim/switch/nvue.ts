/**
 * NVIDIA Cumulus Linux 5.x with NVUE as the `cumulus` user sees it over SSH, for the
 * `cumulus_nvue` driver: bash at `cumulus@switch:mgmt:~$`, `nv set|unset` into a pending
 * revision that belongs to the user and outlives the session, `nv config apply [-y]` (asks
 * `Are you sure? [y/N]` without -y; refuses a port VLAN the bridge lacks with `Invalid config
 * [rev_id: N]`), `nv config detach|diff|save` (`diff -o json`: the pending revision's `set` and
 * `unset` trees), `nv config show -o json`, and `nv show … -o json` of the applied
 * configuration.
 *
 * A port's applied state (model.ts SimPort): in the VLAN-aware bridge `br_default` or not
 * (`switchport`), its VLANs (`allowed`, `all` when it has no `vlan` setting) and its untagged VLAN
 * (`native`: a number, the bridge's 1 by default, or `none`). The bridge's VLANs are the sim's
 * `vlans`. A factory port is in the bridge with every VLAN and VLAN 1 untagged (the trap the
 * driver must undo); unsetting a port's last VLAN returns it to `all`. A bond member (`lag`,
 * e.g. `bond1`) is no bridge port (its bond is): its bridge domain shows `{}`, the applied
 * configuration (`nv config show -o json`) lists it under its bond's `bond member`, and an apply
 * that puts it in the bridge is refused.
 */
import { ShellCli, Status } from './shell-cli';
import type { CarriedVlans, SimPort } from './model';
import { vlanRange } from './model';
import type { Shell, SwitchSim } from './sim';

interface Revision { id: number; ports: Map<string, SimPort>; vlans: Set<number> }

const pending = new WeakMap<SwitchSim, Revision>();
const revisions = new WeakMap<SwitchSim, number>();

const copyPort = (p: SimPort): SimPort => ({ ...p, allowed: p.allowed === 'all' ? 'all' : new Set(p.allowed) });

/** The pending revision of the switch's (one) user, made from the applied configuration at its first change. */
function revision(sim: SwitchSim): Revision {
  let r = pending.get(sim);
  if (!r) {
    const id = (revisions.get(sim) ?? 1) + 1;
    revisions.set(sim, id);
    r = { id, ports: new Map([...sim.ports].map(([n, p]) => [n, copyPort(p)])), vlans: new Set(sim.vlans) };
    pending.set(sim, r);
  }
  return r;
}

/** Is a revision left pending on the switch (a driver that did not detach)? */
export function nvuePending(sim: SwitchSim): boolean {
  return pending.has(sim);
}

export class CumulusNvue extends ShellCli {
  readonly name = 'NVIDIA Cumulus Linux (NVUE)';
  readonly hostname = 'switch';
  override readonly dir = 'mgmt:~';
  readonly portNames = [...Array.from({ length: 48 }, (_, i) => `swp${i + 1}`), 'swp49s0', 'swp49s1', 'swp49s2', 'swp49s3'];
  readonly factoryVlans = '1';
  readonly banner = [
    '',
    'Welcome to NVIDIA Cumulus (R) Linux (R)',
    '',
    'ZTP in progress. To disable, do \'ztp -d\'',
    '',
  ].join('\n');

  newPort(): SimPort {
    return { switchport: true, mode: 'trunk', access: 1, native: 1, allowed: 'all', shutdown: false };
  }

  canonical(typed: string): string | null {
    return /^swp\d+(s\d+)?$/.test(typed.trim()) ? typed.trim() : null;
  }

  carried(sim: SwitchSim, p: SimPort): CarriedVlans {
    if (!p.switchport || p.lag) return { native: null, tagged: [] };
    const vlans = p.allowed === 'all' ? [...sim.vlans] : [...p.allowed];
    const native = typeof p.native === 'number' && vlans.includes(p.native) ? p.native : null;
    return { native, tagged: vlans.filter((v) => v !== native).sort((a, b) => a - b) };
  }

  configures(w: string[]): boolean {
    return w[0] === 'nv' && (w[1] === 'set' || w[1] === 'unset' || (w[1] === 'config' && (w[2] === 'apply' || w[2] === 'detach')));
  }

  changing(_sh: Shell, line: string): boolean {
    return /\bnv config apply\b/.test(line);
  }

  async run(sh: Shell, w: string[]): Promise<Status> {
    if (w[0] === 'lldpctl') return this.lldpctl(sh, w);
    if (w[0] !== 'nv') return this.notFound(sh, w[0]!);
    if (sh.sim.faults.failConfig && this.configures(w)) {
      sh.line(`Error: Permission denied: ${sh.sim.username} is not in the nvset and nvapply groups`);
      return 1;
    }
    if (w[1] === 'show') return this.show(sh, w.slice(2));
    if (w[1] === 'set' || w[1] === 'unset') return this.set(sh, w[1] === 'set', w.slice(2));
    if (w[1] === 'config') return this.config(sh, w.slice(2));
    sh.line(`Error: Invalid command: nv ${w[1] ?? ''}`);
    return 1;
  }

  private invalid(sh: Shell, what: string): Status {
    sh.line(`Error: Invalid parameter: ${what}`);
    return 1;
  }

  private set(sh: Shell, on: boolean, a: string[]): Status {
    const rev = () => revision(sh.sim);
    // bridge domain br_default vlan <list>
    if (a[0] === 'bridge' && a[1] === 'domain') {
      if (a[2] !== 'br_default') return this.invalid(sh, `bridge domain ${a[2] ?? ''} (this switch has br_default)`);
      if (a[3] !== 'vlan' || a.length !== 5) return this.invalid(sh, a.slice(3).join(' '));
      let list: number[];
      try {
        list = vlanRange(a[4]!);
      } catch {
        return this.invalid(sh, `vlan ${a[4]}: not a VLAN list within 1-4094`);
      }
      for (const v of list) if (on) rev().vlans.add(v); else rev().vlans.delete(v);
      return 0;
    }
    if (a[0] !== 'interface' || !a[1]) return this.invalid(sh, a.join(' '));
    const name = a[1];
    if (!sh.sim.ports.has(name)) return this.invalid(sh, `interface ${name} does not exist`);
    const rest = a.slice(2);
    if (rest[0] === 'link' && rest[1] === 'state' && rest.length === (on ? 3 : 2)) {
      if (on && rest[2] !== 'up' && rest[2] !== 'down') return this.invalid(sh, `link state ${rest[2]}: up or down`);
      if (sh.sim.faults.ignoreChanges) {
        sh.sim.faults.ignoreChanges--;
        return 0;
      }
      rev().ports.get(name)!.shutdown = on && rest[2] === 'down';
      return 0;
    }
    if (rest[0] !== 'bridge' || rest[1] !== 'domain' || rest[2] !== 'br_default') return this.invalid(sh, rest.join(' '));
    if (sh.sim.faults.ignoreChanges) {
      sh.sim.faults.ignoreChanges--;
      return 0;
    }
    const p = rev().ports.get(name)!;
    const join = () => {
      if (!p.switchport) Object.assign(p, { switchport: true, native: 1, allowed: 'all' });
    };
    if (rest.length === 3) {
      if (on) join();
      else Object.assign(p, { switchport: false, native: 1, allowed: 'all' });
      return 0;
    }
    if (rest[3] === 'vlan' && rest.length === 5) {
      let list: number[];
      try {
        list = vlanRange(rest[4]!);
      } catch {
        return this.invalid(sh, `vlan ${rest[4]}: not a VLAN list within 1-4094`);
      }
      if (on) {
        join();
        p.allowed = new Set([...(p.allowed === 'all' ? [] : p.allowed), ...list]);
      } else if (p.switchport && p.allowed !== 'all') {
        for (const v of list) p.allowed.delete(v);
        // the port's last VLAN gone: back to the default, every VLAN of the bridge
        if (!p.allowed.size) p.allowed = 'all';
      }
      return 0;
    }
    if (rest[3] === 'untagged' && rest.length === (on ? 5 : 4)) {
      if (!on) {
        p.native = 1;
        return 0;
      }
      if (rest[4] !== 'none' && !/^\d+$/.test(rest[4]!)) return this.invalid(sh, `untagged ${rest[4]}: a VLAN id or none`);
      join();
      p.native = rest[4] === 'none' ? 'none' : Number(rest[4]);
      return 0;
    }
    return this.invalid(sh, rest.join(' '));
  }

  private async config(sh: Shell, a: string[]): Promise<Status> {
    const sim = sh.sim;
    const rev = pending.get(sim);
    switch (a[0]) {
      case 'detach':
        pending.delete(sim);
        return 0;
      case 'diff':
        if (a.slice(1).join(' ') === '-o json') {
          sh.line(JSON.stringify(rev ? this.revisionDiff(sim, rev) : [], null, 2));
          return 0;
        }
        if (rev) sh.line(`- set:\n    interface: {}  # revision ${rev.id}`);
        return 0;
      case 'save':
        sim.saves++;
        return 0;
      case 'show':
        if (a.slice(1).join(' ') !== '-o json') return this.invalid(sh, 'this simulator shows JSON only (-o json)');
        sh.line(JSON.stringify(this.appliedConfig(sim), null, 2));
        return 0;
      case 'apply': {
        if (!a.includes('-y') && !a.includes('--assume-yes')) {
          sh.print('Are you sure? [y/N] ');
          if (!/^y/i.test((await sh.readLine()).trim())) return 1;
        }
        if (!rev) {
          sh.line('Warning: no pending changes to apply');
          return 0;
        }
        if (sim.opts.commitDelayMs) await new Promise((r) => setTimeout(r, sim.opts.commitDelayMs));
        const problems: string[] = [];
        if (sim.faults.failCommit) problems.push('a check refused the revision (simulated fault)');
        for (const [n, p] of rev.ports) {
          const applied = sim.ports.get(n)!;
          const bridged = (x: SimPort) => JSON.stringify([x.switchport, x.native, x.allowed === 'all' ? 'all' : [...x.allowed].sort()]);
          if (p.lag && bridged(p) !== bridged(applied)) problems.push(`interface ${n}: a member of bond ${p.lag} cannot be in bridge domain br_default`);
          if (!p.switchport || p.lag) continue;
          const missing = p.allowed === 'all' ? [] : [...p.allowed].filter((v) => !rev.vlans.has(v));
          if (missing.length) problems.push(`interface ${n}: vlan ${missing.join(',')} is not in bridge domain br_default`);
          if (typeof p.native === 'number' && !rev.vlans.has(p.native)) problems.push(`interface ${n}: untagged ${p.native} is not in bridge domain br_default`);
        }
        if (problems.length) {
          sh.line(`Invalid config [rev_id: ${rev.id}]`);
          for (const l of problems) sh.line(`  ${l}`);
          return 1;
        }
        for (const [n, p] of rev.ports) sim.ports.set(n, p);
        sim.vlans.clear();
        for (const v of rev.vlans) sim.vlans.add(v);
        pending.delete(sim);
        // past its checks the revision is written to the switch: a service that fails to
        // restart then leaves it applied in part, not undone
        if (sim.faults.failApply) {
          sh.line(`Failure during apply [rev_id: ${rev.id}]`);
          sh.line('  Unable to restart services: switchd.service (simulated fault)');
          return 1;
        }
        sim.commits++;
        sh.line(`applied [rev_id: ${rev.id}]`);
        return 0;
      }
      default:
        return this.invalid(sh, `config ${a[0] ?? ''}`);
    }
  }

  private show(sh: Shell, a: string[]): Status {
    const json = a.slice(-2).join(' ') === '-o json';
    const w = json ? a.slice(0, -2) : a;
    if (!json) return this.invalid(sh, 'this simulator shows JSON only (-o json)');
    const out = (x: unknown) => {
      sh.line(JSON.stringify(x, null, 2));
      return 0;
    };
    if (w.join(' ') === 'bridge domain br_default vlan') return out(Object.fromEntries([...sh.sim.vlans].sort((x, y) => x - y).map((v) => [String(v), {}])));
    if (w.join(' ') === 'bridge domain br_default mac-table') {
      const entries: Record<string, unknown> = {};
      sh.sim.learned().macs.forEach((m, i) => { entries[String(i + 1)] = { age: 30, 'bridge-domain': 'br_default', 'entry-type': 'learned', interface: m.port, 'last-update': 30, mac: m.mac.match(/../g)!.join(':'), vlan: m.vlan }; });
      // the bridge's own address on every VLAN it has
      entries[String(Object.keys(entries).length + 1)] = { 'bridge-domain': 'br_default', 'entry-type': 'permanent', interface: 'br_default', mac: '44:38:39:00:00:01', vlan: 1 };
      return out(entries);
    }
    if (w[0] === 'interface' && w[1]) {
      const p = sh.sim.ports.get(w[1]);
      if (!p) {
        sh.line(`Error: The requested item does not exist.`);
        return 1;
      }
      const rest = w.slice(2).join(' ');
      if (rest === 'link') return out({ 'admin-status': p.shutdown ? 'down' : 'up', mtu: 9216, speed: 'auto', state: { [p.shutdown ? 'down' : 'up']: {} } });
      if (rest === 'bridge domain br_default') {
        if (!p.switchport || p.lag) return out({});
        return out({
          learning: 'on',
          stp: { 'admin-edge': 'off', 'auto-edge': 'on', 'bpdu-filter': 'off', 'bpdu-guard': 'off', network: 'off', restrrole: 'off' },
          untagged: p.native === 'none' ? 'none' : p.native,
          vlan: p.allowed === 'all' ? { all: {} } : Object.fromEntries([...p.allowed].sort((x, y) => x - y).map((v) => [String(v), {}])),
        });
      }
    }
    sh.line('Error: The requested item does not exist.');
    return 1;
  }

  /** `nv config diff -o json`: the pending revision against the applied configuration, as `set` and `unset` trees */
  private revisionDiff(sim: SwitchSim, rev: Revision): unknown[] {
    const set: Record<string, Record<string, unknown>> = {};
    const unset: Record<string, Record<string, unknown>> = {};
    const bridgeOf = (p: SimPort) => ({ ...(p.native !== 1 ? { untagged: p.native } : {}), ...(p.allowed !== 'all' ? { vlan: Object.fromEntries([...p.allowed].map((v) => [String(v), {}])) } : {}) });
    for (const [n, p] of rev.ports) {
      const was = sim.ports.get(n)!;
      if (p.switchport !== was.switchport || p.native !== was.native || JSON.stringify(bridgeOf(p)) !== JSON.stringify(bridgeOf(was))) {
        if (p.switchport) (set.interface ??= {})[n] = { bridge: { domain: { br_default: bridgeOf(p) } } };
        else (unset.interface ??= {})[n] = { bridge: { domain: { br_default: {} } } };
      }
      if (p.shutdown !== was.shutdown) {
        const i = ((set.interface ??= {})[n] ??= {}) as Record<string, unknown>;
        i.link = { state: { [p.shutdown ? 'down' : 'up']: {} } };
      }
    }
    const vlans = (from: Set<number>, to: Set<number>) => Object.fromEntries([...to].filter((v) => !from.has(v)).map((v) => [String(v), {}]));
    const added = vlans(sim.vlans, rev.vlans);
    const removed = vlans(rev.vlans, sim.vlans);
    if (Object.keys(added).length) set.bridge = { domain: { br_default: { vlan: added } } };
    if (Object.keys(removed).length) unset.bridge = { domain: { br_default: { vlan: removed } } };
    return [...(Object.keys(set).length ? [{ set }] : []), ...(Object.keys(unset).length ? [{ unset }] : [])];
  }

  /** `nv config show -o json`: the header, then the applied configuration's `set` tree (the parts this simulator models) */
  private appliedConfig(sim: SwitchSim): unknown {
    const interfaces: Record<string, Record<string, unknown>> = {};
    for (const [n, p] of sim.ports) {
      const i: Record<string, unknown> = {};
      if (p.lag) {
        const bond = (interfaces[p.lag] ??= { bond: { member: {} }, bridge: { domain: { br_default: {} } }, type: 'bond' });
        (bond.bond as { member: Record<string, unknown> }).member[n] = {};
      } else if (p.switchport) {
        const d: Record<string, unknown> = {};
        if (p.native !== 1) d.untagged = p.native;
        if (p.allowed !== 'all') d.vlan = Object.fromEntries([...p.allowed].sort((x, y) => x - y).map((v) => [String(v), {}]));
        i.bridge = { domain: { br_default: d } };
      }
      if (p.shutdown) i.link = { state: { down: {} } };
      if (Object.keys(i).length) interfaces[n] = { ...i, type: 'swp' };
    }
    const vlan = Object.fromEntries([...sim.vlans].sort((x, y) => x - y).map((v) => [String(v), {}]));
    return [
      { header: { model: 'VX', 'nvue-api-version': 'nvue_v1', 'rev-id': 1.0, version: 'Cumulus Linux 5.9.0' } },
      { set: { bridge: { domain: { br_default: { vlan } } }, interface: interfaces } },
    ];
  }

  /** `lldpctl -f keyvalue` (lldpd, Cumulus' LLDP daemon): one `lldp.<port>.<field>=value` line per field */
  private lldpctl(sh: Shell, w: string[]): Status {
    if (w.slice(1).join(' ') !== '-f keyvalue') {
      sh.line('lldpctl: this simulator prints -f keyvalue only');
      return 1;
    }
    for (const { port, n } of sh.sim.learned().neighbors) {
      sh.line(`lldp.${port}.via=LLDP`);
      sh.line(`lldp.${port}.rid=1`);
      sh.line(`lldp.${port}.chassis.mac=${n.chassisId}`);
      if (n.systemName) sh.line(`lldp.${port}.chassis.name=${n.systemName}`);
      sh.line(`lldp.${port}.port.${/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/i.test(n.portId) ? 'mac' : 'ifname'}=${n.portId}`);
      sh.line(`lldp.${port}.port.descr=${n.portId}`);
    }
    return 0;
  }
}
