/**
 * Dell SmartFabric OS10 as seen over SSH, for the `dellos10` driver: `OS10#` (no enable step),
 * `OS10(config)#`, `OS10(conf-if-eth1/1/1)#`, `OS10(conf-if-vl-100)#`; `terminal length 0`
 * (else the `--more--` pager); `% Error: …` refusals; `interface vlan <id>` creates a VLAN, and
 * a port may use only VLANs that exist; `show running-configuration interface <port>`; `write
 * memory` and `copy running-configuration startup-configuration`.
 *
 * A port's state (model.ts SimPort): its mode; `access`, its untagged VLAN in both modes (in
 * trunk mode OS10's native VLAN is the access VLAN; 0: none); `allowed`, the trunk's tagged
 * VLANs. A factory port is an access port of VLAN 1.
 */
import type { CarriedVlans, SimPort } from './model';
import { ranges, vlanRange } from './model';
import type { Shell, SwitchSim } from './sim';
import type { SimVendor } from './vendors';

const word = (t: string | undefined, w: string, min = 2) => t !== undefined && t.length >= min && w.startsWith(t.toLowerCase());

export class DellOs10 implements SimVendor {
  readonly name = 'Dell OS10';
  readonly hostname = 'OS10';
  readonly inbandLogin = false;
  readonly privilegedAtLogin = true;
  readonly pager = '--more--';
  readonly factoryVlans = '1';
  readonly banner = 'Last login: Thu Jan  1 00:00:00 2026 from 127.0.0.1\nOS10 Enterprise Edition, 10.5.4.0\nCopyright (c) 1999-2024 by Dell Inc. All Rights Reserved.\n';
  readonly portNames = [
    ...Array.from({ length: 48 }, (_, i) => `ethernet1/1/${i + 1}`),
    ...[1, 2, 3, 4].map((b) => `ethernet1/1/49:${b}`),
  ];

  canonical(typed: string): string | null {
    const m = /^e(?:t(?:h(?:e(?:r(?:n(?:e(?:t)?)?)?)?)?)?)?\s*(\d+\/\d+\/\d+(?::\d+)?)$/i.exec(typed.trim());
    return m ? `ethernet${m[1]}` : null;
  }

  newPort(): SimPort {
    return { switchport: true, mode: 'access', access: 1, native: 'none', allowed: new Set(), shutdown: false };
  }

  carried(_sim: SwitchSim, p: SimPort): CarriedVlans {
    if (!p.switchport) return { native: null, tagged: [] };
    const native = p.access || null;
    return { native, tagged: p.mode === 'trunk' && p.allowed !== 'all' ? [...p.allowed].sort((a, b) => a - b) : [] };
  }

  prompt(h: string, mode: string, iface: string, vlan: number): string {
    if (mode === 'config') return `${h}(config)# `;
    if (mode === 'if') return `${h}(conf-if-${iface.replace(/^ethernet/, 'eth')})# `;
    if (mode === 'vlan') return `${h}(conf-if-vl-${vlan})# `;
    return `${h}# `;
  }

  private error(sh: Shell, text: string): void {
    sh.line(`% Error: ${text}`);
  }

  async command(sh: Shell, cmd: string): Promise<void | 'logout'> {
    const t = cmd.split(/\s+/);
    if (t[0] === 'end') {
      sh.mode = 'exec';
      return;
    }
    if (t[0] === 'exit') {
      if (sh.mode === 'exec') return 'logout';
      sh.mode = sh.mode === 'config' ? 'exec' : 'config';
      return;
    }
    if (word(t[0], 'show')) return this.show(sh, t);
    if (sh.mode === 'exec') {
      if (word(t[0], 'terminal') && word(t[1], 'length') && /^\d+$/.test(t[2] ?? '') && t.length === 3) {
        if (!sh.sim.faults.ignorePagingOff) sh.paging = t[2] !== '0';
        return;
      }
      if (word(t[0], 'configure') && (t.length === 1 || (t.length === 2 && word(t[1], 'terminal')))) {
        sh.mode = 'config';
        return;
      }
      if ((word(t[0], 'write') && word(t[1], 'memory') && t.length === 2)
        || (word(t[0], 'copy') && t[1] === 'running-configuration' && t[2] === 'startup-configuration' && t.length === 3)) {
        sh.sim.saves++;
        return;
      }
      return this.error(sh, 'Unrecognized command.');
    }
    if (sh.sim.faults.failConfig) return this.error(sh, 'Permission denied.');
    const no = t[0] === 'no';
    const w = no ? t.slice(1) : t;
    if (word(w[0], 'interface')) {
      if (word(w[1], 'vlan', 1)) {
        const v = Number(w[2]);
        if (!/^\d+$/.test(w[2] ?? '') || v < 1 || v > 4093 || w.length !== 3) return this.error(sh, 'Illegal parameter.');
        if (no) {
          if (v === 1) return this.error(sh, 'Cannot delete default VLAN.');
          sh.sim.vlans.delete(v);
          return;
        }
        sh.sim.vlans.add(v);
        sh.mode = 'vlan';
        sh.vlan = v;
        return;
      }
      const name = this.canonical(w.slice(1).join(' '));
      if (no || !name || !sh.sim.ports.has(name)) return this.error(sh, 'Illegal parameter.');
      sh.mode = 'if';
      sh.iface = name;
      return;
    }
    if (sh.mode === 'vlan') {
      if (word(w[0], 'description') || word(w[0], 'shutdown')) return;
      return this.error(sh, 'Unrecognized command.');
    }
    if (sh.mode !== 'if') return this.error(sh, 'Unrecognized command.');
    if (sh.sim.faults.ignoreChanges) {
      sh.sim.faults.ignoreChanges--;
      return;
    }
    return this.port(sh, sh.sim.ports.get(sh.iface)!, no, w);
  }

  private port(sh: Shell, p: SimPort, no: boolean, w: string[]): void {
    if (word(w[0], 'shutdown', 4) && w.length === 1) {
      p.shutdown = !no;
      return;
    }
    if (word(w[0], 'description') || word(w[0], 'flowcontrol')) return;
    if (!word(w[0], 'switchport')) return this.error(sh, 'Unrecognized command.');
    if (w.length === 1) {
      p.switchport = !no;
      return;
    }
    if (word(w[1], 'mode')) {
      if (no) {
        p.mode = 'access';
        return;
      }
      const mode = word(w[2], 'trunk', 1) ? 'trunk' : word(w[2], 'access', 1) ? 'access' : null;
      if (!mode || w.length !== 3) return this.error(sh, w.length < 3 ? 'Incomplete command.' : 'Illegal parameter.');
      p.mode = mode;
      return;
    }
    if (word(w[1], 'access') && word(w[2], 'vlan', 1)) {
      if (no) {
        p.access = 0;
        return;
      }
      const v = Number(w[3]);
      if (!/^\d+$/.test(w[3] ?? '') || v < 1 || v > 4093 || w.length !== 4) return this.error(sh, w.length < 4 ? 'Incomplete command.' : 'Illegal parameter.');
      if (!sh.sim.vlans.has(v)) return this.error(sh, `Vlan ${v} does not exist.`);
      p.access = v;
      return;
    }
    if (word(w[1], 'trunk') && word(w[2], 'allowed') && word(w[3], 'vlan', 1)) {
      if (w.length !== 5) return this.error(sh, w.length < 5 ? 'Incomplete command.' : 'Illegal parameter.');
      let list: number[];
      try {
        list = vlanRange(w[4]!, 4093);
      } catch {
        return this.error(sh, 'Illegal parameter.');
      }
      if (p.mode !== 'trunk') return this.error(sh, 'Interface is not in trunk mode.');
      const allowed = p.allowed === 'all' ? new Set<number>() : p.allowed;
      if (no) for (const v of list) allowed.delete(v);
      else {
        const missing = list.filter((v) => !sh.sim.vlans.has(v));
        if (missing.length) return this.error(sh, `Vlan ${ranges(missing)} does not exist.`);
        for (const v of list) allowed.add(v);
      }
      p.allowed = allowed;
      return;
    }
    return this.error(sh, 'Unrecognized command.');
  }

  private async show(sh: Shell, t: string[]): Promise<void> {
    if (word(t[1], 'mac', 1) && word(t[2], 'address-table') && t.length === 3) return this.macTable(sh);
    if (word(t[1], 'lldp') && word(t[2], 'neighbors') && t.length === 3) return this.lldp(sh);
    if (!(word(t[1], 'running-configuration') && word(t[2], 'interface'))) return this.error(sh, 'Unrecognized command.');
    const name = this.canonical(t.slice(3).join(' '));
    const p = name ? sh.sim.ports.get(name) : undefined;
    if (!name || !p) return this.error(sh, 'Illegal parameter.');
    const lines = ['!', `interface ${name}`, p.shutdown ? ' shutdown' : ' no shutdown'];
    if (p.lag) lines.push(` channel-group ${p.lag} mode active`, ' no switchport');
    else if (!p.switchport) lines.push(' no switchport');
    else {
      if (p.mode === 'trunk') lines.push(' switchport mode trunk');
      // The running configuration leaves defaults out, as a replayable configuration must: the
      // default untagged VLAN 1 prints nothing, in either mode, and no untagged VLAN says so.
      if (!p.access) lines.push(' no switchport access vlan');
      else if (p.access !== 1) lines.push(` switchport access vlan ${p.access}`);
      if (p.mode === 'trunk' && p.allowed !== 'all' && p.allowed.size) lines.push(` switchport trunk allowed vlan ${ranges(p.allowed)}`);
    }
    lines.push(' flowcontrol receive on', ' flowcontrol transmit off');
    await sh.page(lines);
  }

  /** `show mac address-table`: VlanId, Mac Address, Type, Interface */
  private async macTable(sh: Shell): Promise<void> {
    const { macs } = sh.sim.learned();
    const lines = ['VlanId  Mac Address         Type      Interface'];
    for (const m of macs) lines.push(`${String(m.vlan).padEnd(8)}${m.mac.match(/../g)!.join(':').padEnd(20)}dynamic   ${m.port}`);
    await sh.page(lines);
  }

  /** `show lldp neighbors`: Loc PortID, Rem Host Name, Rem Port Id, Rem Chassis Id, under a rule */
  private async lldp(sh: Shell): Promise<void> {
    const { neighbors } = sh.sim.learned();
    const lines = [`${'Loc PortID'.padEnd(20)}${'Rem Host Name'.padEnd(22)}${'Rem Port Id'.padEnd(30)}Rem Chassis Id`, '-'.repeat(90)];
    for (const { port, n } of neighbors) lines.push(`${port.padEnd(20)}${(n.systemName ?? 'Not Advertised').padEnd(22)}${n.portId.padEnd(30)}${n.chassisId}`);
    await sh.page(lines);
  }
}
