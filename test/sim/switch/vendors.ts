/**
 * The four CLIs the simulators play, after the vendors' command references and captured
 * sessions: prompts, the commands a switch driver sends (with the abbreviations the CLIs take:
 * every keyword may be shortened to a unique prefix), the `show … switchport` output shapes,
 * `shutdown` / `no shutdown` and the show of a port's administrative state, the learned-MAC
 * table and LLDP neighbours as each prints them, paging, the save dialogues and the messages
 * each prints when it refuses a command.
 *
 * - Cisco Nexus (NX-OS): `switch#`, `switch(config)#`, `switch(config-if)#`; a fresh trunk allows
 *   `1-4094`; `Copy complete.`; refusals `% Invalid command at '^' marker.` under a caret line.
 * - Dell PowerConnect 55xx: in-band `User Name:`/`Password:`; `console#`, `console(config-if)#`;
 *   `terminal datadump`; pager `More: <space>,  Quit: q or CTRL+Z, One line: <return> `; VLANs
 *   must exist; console log lines `%COPY-I-FILECPY: …` (not errors); `Copy succeeded`.
 * - Dell N3000 (DNOS6): `console>` then `enable`; `console(config-if-Gi1/0/1)#`; a fresh trunk
 *   allows `All`; VLANs must exist, and the native VLAN must be allowed; a warning on VLAN list
 *   changes; `Are you sure you want to save? (y/n)`, `Configuration Saved!`.
 * - Arista EOS: `switch>` then `enable`; `switch(config-if-Et1)#`; a fresh port is a `static
 *   access` port; `switchport trunk native vlan tag`; `write memory` → `Copy completed
 *   successfully.`; refusals `% Invalid input`, `% Incomplete command`.
 */
import { ALL_VLANS, carried, ranges, SimNeighbor, SimPort, vlanRange } from './model';
import type { Shell, SwitchSim } from './sim';
import type { CarriedVlans } from './model';
import { FABRICS, FabricName } from './fabrics';

export type VendorName = 'nexus' | 'powerconnect55xx' | 'delln3000' | 'arista_eos' | FabricName;

export interface SimVendor {
  readonly name: string;
  /** the factory default host name of the prompt */
  readonly hostname: string;
  /** SSH `none` authentication, then `User Name:` / `Password:` in the shell */
  readonly inbandLogin: boolean;
  /** the CLI starts at the privileged (`#`) prompt */
  readonly privilegedAtLogin: boolean;
  readonly banner?: string;
  /** the pager's prompt */
  readonly pager: string;
  readonly portNames: string[];
  /** the canonical name of a port as typed (`e1/5`, `Ethernet1/5`, `gi1/0/5`, `Et5`…), or null */
  canonical(typed: string): string | null;
  newPort(): SimPort;
  prompt(hostname: string, mode: string, iface: string, vlan: number, user: string): string;
  /** Run one command line; `logout` ends the session. */
  command(sh: Shell, cmd: string): Promise<void | 'logout'>;
  /** the VLANs a factory switch has (default `1-4093`; empty: none) */
  readonly factoryVlans?: string;
  /** what a port carries, where the generic model's rule (model.ts `carried`) is not the switch's */
  carried?(sim: SwitchSim, p: SimPort): CarriedVlans;
  /** the command line is a configuration command (faults `hang`/`drop` at `config`); default: any command in a configuration mode */
  configuring?(sh: Shell, cmd: string): boolean;
  /** the command line changes the switch itself (fault `hangAfterChange`); default: any command in interface mode */
  changing?(sh: Shell, cmd: string): boolean;
}

/** A MAC's 12 hex digits as `aabb.ccdd.eeff` (Cisco, Arista, DNOS6) or `aa:bb:cc:dd:ee:ff` (PowerConnect). */
const dotted = (hex: string) => hex.match(/.{4}/g)!.join('.');
const colons = (hex: string) => hex.match(/../g)!.join(':');

/** Cells left-aligned at their columns' widths (a fixed-width table row). */
const cells = (values: string[], widths: number[]) => values.map((v, i) => (i < widths.length - 1 ? v.padEnd(widths[i]!) : v)).join(' ').trimEnd();
const rule = (widths: number[]) => widths.map((w) => '-'.repeat(w)).join(' ');

type MacRow = { port: string; mac: string; vlan: number };
type NeighborRow = { port: string; n: SimNeighbor };

/** Keyword matching as the CLIs do it: a typed token is a prefix of the keyword. */
const is = (token: string | undefined, word: string, min = 1) => token !== undefined && token.length >= min && word.startsWith(token.toLowerCase());

abstract class Cli implements SimVendor {
  abstract readonly name: string;
  abstract readonly hostname: string;
  readonly inbandLogin: boolean = false;
  readonly privilegedAtLogin: boolean = true;
  readonly banner?: string;
  abstract readonly pager: string;
  abstract readonly portNames: string[];
  abstract canonical(typed: string): string | null;
  /** VLAN ids the CLI takes */
  readonly vlanMax: number = ALL_VLANS;
  /** VLANs must exist before a port may carry them */
  readonly vlansMustExist: boolean = false;
  /** `switchport` / `no switchport` exist (layer 2 / routed ports) */
  readonly l3Ports: boolean = false;
  /** `configure terminal` (else `configure` only) */
  readonly configureTerminal: boolean = true;

  newPort(): SimPort {
    return { switchport: true, mode: 'access', access: 1, native: 1, allowed: 'all', shutdown: false };
  }

  abstract prompt(hostname: string, mode: string, iface: string, vlan: number): string;
  /** The vendor's refusal of the token at `column` (a caret line, then the message). */
  abstract invalid(sh: Shell, column: number): void;
  abstract incomplete(sh: Shell, column: number): void;
  /** What a switch that does not let this user configure answers (SimFaults.failConfig). */
  abstract denied(sh: Shell, cmd: string): void;
  abstract noInterface(sh: Shell, column: number, typed: string): void;
  abstract showSwitchport(sh: Shell, tokens: string[]): Promise<void>;
  /** The learned-MAC table (of every port, or of one) as the vendor prints it. */
  abstract showMacs(sh: Shell, rows: MacRow[]): Promise<void>;
  /** `show lldp …` (tokens from `lldp` on). */
  abstract showLldp(sh: Shell, tokens: string[], neighbors: NeighborRow[]): Promise<void>;
  /** The vendor's show of a port's administrative state, if `tokens` are that command: true once answered. */
  abstract showAdmin(sh: Shell, tokens: string[]): Promise<boolean>;

  /** `show …`: learned MACs, LLDP neighbours, a port's administrative state, or its switchport settings. */
  async show(sh: Shell, t: string[]): Promise<void> {
    const cmd = t.join(' ');
    if (is(t[1], 'mac', 3) && is(t[2], 'address-table', 3)) {
      let only: string | undefined;
      if (t.length > 3) {
        if (!is(t[3], 'interface', 3)) return this.invalid(sh, this.column(cmd, t, 3));
        const name = this.portIn(t, 4);
        if (!name || !sh.sim.ports.has(name)) return this.noInterface(sh, this.column(cmd, t, 4), t.slice(4).join(' '));
        only = name;
      }
      return this.showMacs(sh, sh.sim.learned(only).macs);
    }
    if (is(t[1], 'lldp', 2)) return this.showLldp(sh, t.slice(2), sh.sim.learned().neighbors);
    if (await this.showAdmin(sh, t)) return;
    return this.showSwitchport(sh, t);
  }

  /** A port is up with a link: it learned something. */
  linked(sh: Shell, port: string): boolean {
    return !sh.sim.ports.get(port)!.shutdown && (!!sh.sim.macs.get(port)?.length || sh.sim.neighbors.has(port));
  }
  abstract save(sh: Shell, tokens: string[]): Promise<void>;
  /** `terminal …`: paging on or off */
  abstract terminal(sh: Shell, tokens: string[], cmd: string): void;

  /** VLANs that do not exist (Dell): say so; true when some are missing. */
  missingVlans(sh: Shell, vlans: number[]): boolean {
    if (!this.vlansMustExist) return false;
    const missing = vlans.filter((v) => !sh.sim.vlans.has(v));
    if (!missing.length) return false;
    this.noVlan(sh, missing);
    return true;
  }

  noVlan(sh: Shell, missing: number[]): void {
    sh.line(`% VLAN ${ranges(missing)} does not exist`);
  }

  /** Printed after a change of a trunk's VLAN list (DNOS6's warning). */
  afterVlanList(_sh: Shell): void {}

  /** Whether the native VLAN may be set (N3000: it must exist and be allowed). */
  nativeAllowed(sh: Shell, port: SimPort, vlan: number): boolean {
    return !this.missingVlans(sh, [vlan]) || false;
  }

  /** `switchport mode …` on a port already in another mode. */
  modeChanged(_port: SimPort): void {}

  column(cmd: string, tokens: string[], i: number): number {
    let at = 0;
    for (let j = 0; j < i && j < tokens.length; j++) at = cmd.indexOf(tokens[j]!, at) + tokens[j]!.length;
    const next = i < tokens.length ? cmd.indexOf(tokens[i]!, at) : cmd.length;
    return next < 0 ? cmd.length : next;
  }

  async command(sh: Shell, cmd: string): Promise<void | 'logout'> {
    const t = cmd.split(/\s+/);
    const col = (i: number) => this.column(cmd, t, i);
    if (sh.mode === 'user' || sh.mode === 'exec') {
      if (is(t[0], 'enable', 2) && t.length === 1) {
        sh.mode = 'exec';
        return;
      }
      if (is(t[0], 'disable', 4)) {
        sh.mode = 'user';
        return;
      }
      if (is(t[0], 'exit', 2) || is(t[0], 'logout', 4) || is(t[0], 'quit', 4)) return 'logout';
      if (is(t[0], 'terminal', 3)) return this.terminal(sh, t, cmd);
      if (is(t[0], 'show', 2)) return this.show(sh, t);
      if (sh.mode === 'user') return this.invalid(sh, col(0));
      if (is(t[0], 'configure', 4)) {
        if (t.length > 2 || (t.length === 2 && !(this.configureTerminal && is(t[1], 'terminal', 1)))) return this.invalid(sh, col(1));
        sh.mode = 'config';
        this.enteredConfig(sh);
        return;
      }
      if ((is(t[0], 'copy', 2) && is(t[1], 'running-config', 3) && is(t[2], 'startup-config', 3) && t.length === 3)
        || (is(t[0], 'write', 2) && is(t[1], 'memory', 3) && t.length === 2 && this.writeMemory)) return this.save(sh, t);
      return this.invalid(sh, col(0));
    }
    if (is(t[0], 'end', 3) && t.length === 1) {
      sh.mode = 'exec';
      return;
    }
    if (is(t[0], 'exit', 2) && t.length === 1) {
      sh.mode = sh.mode === 'config' ? 'exec' : 'config';
      return;
    }
    if (sh.sim.faults.failConfig) return this.denied(sh, cmd);
    if (is(t[0], 'interface', 3)) {
      if (t.length < 2) return this.incomplete(sh, col(1));
      const name = this.canonical(t.slice(1).join(' '));
      if (!name || !sh.sim.ports.has(name)) return this.noInterface(sh, col(1), t.slice(1).join(' '));
      sh.mode = 'if';
      sh.iface = name;
      return;
    }
    if (sh.mode === 'config' || sh.mode === 'vlan') {
      const no = is(t[0], 'no', 2);
      const k = no ? 1 : 0;
      if (is(t[k], 'vlan', 2)) {
        if (t.length !== k + 2) return t.length < k + 2 ? this.incomplete(sh, col(k + 1)) : this.invalid(sh, col(k + 2));
        let list: number[];
        try {
          list = vlanRange(t[k + 1]!, this.vlanMax);
        } catch {
          return this.invalid(sh, col(k + 1));
        }
        for (const v of list) if (no) sh.sim.vlans.delete(v); else sh.sim.vlans.add(v);
        if (!no) {
          sh.mode = 'vlan';
          sh.vlan = list[0]!;
        }
        return;
      }
      if (sh.mode === 'vlan' && is(t[0], 'name', 2)) return;
      return this.invalid(sh, col(0));
    }
    // interface configuration
    if (sh.sim.faults.ignoreChanges) {
      sh.sim.faults.ignoreChanges--;
      return;
    }
    const port = sh.sim.ports.get(sh.iface)!;
    if (is(t[0], 'shutdown', 3) && t.length === 1) {
      port.shutdown = true;
      return;
    }
    if (is(t[0], 'no', 2) && is(t[1], 'shutdown', 3) && t.length === 2) {
      port.shutdown = false;
      return;
    }
    if (is(t[0], 'description', 4)) {
      port.description = cmd.replace(/^\S+\s*/, '');
      return;
    }
    if (is(t[0], 'no', 2) && is(t[1], 'description', 4)) {
      delete port.description;
      return;
    }
    const no = is(t[0], 'no', 2);
    const s = no ? 1 : 0;
    if (!is(t[s], 'switchport', 2)) return this.invalid(sh, col(s));
    if (t.length === s + 1) {
      if (!this.l3Ports) return this.incomplete(sh, col(s + 1));
      port.switchport = !no;
      return;
    }
    if (is(t[s + 1], 'mode', 2)) {
      if (no) {
        port.mode = 'access';
        return;
      }
      if (t.length < 3) return this.incomplete(sh, col(2));
      const mode = is(t[2], 'trunk', 1) ? 'trunk' : is(t[2], 'access', 1) ? 'access' : null;
      if (!mode || t.length > 3) return this.invalid(sh, col(mode ? 3 : 2));
      if (port.mode !== mode) this.modeChanged(port);
      port.mode = mode;
      return;
    }
    if (is(t[s + 1], 'access', 2) && is(t[s + 2], 'vlan', 1)) {
      if (no) {
        port.access = 1;
        return;
      }
      if (t.length < 4) return this.incomplete(sh, col(3));
      const v = Number(t[3]);
      if (!/^\d+$/.test(t[3]!) || v < 1 || v > this.vlanMax) return this.invalid(sh, col(3));
      if (this.missingVlans(sh, [v])) return;
      port.access = v;
      return;
    }
    if (is(t[s + 1], 'trunk', 2) && is(t[s + 2], 'allowed', 2) && is(t[s + 3], 'vlan', 1)) {
      if (no) {
        port.allowed = 'all';
        return;
      }
      return this.allowedVlan(sh, port, t, col);
    }
    if (is(t[s + 1], 'trunk', 2) && is(t[s + 2], 'native', 2) && is(t[s + 3], 'vlan', 1)) {
      if (no) {
        port.native = 1;
        return;
      }
      return this.nativeVlan(sh, port, t, col);
    }
    return this.invalid(sh, col(s + 1));
  }

  /** `copy running-config startup-config` also as `write memory` */
  readonly writeMemory: boolean = false;

  enteredConfig(_sh: Shell): void {}

  /** `switchport trunk allowed vlan {add|remove|except} <list> | none | all | <list>` */
  allowedVlan(sh: Shell, port: SimPort, t: string[], col: (i: number) => number): void {
    const op = t[4];
    if (op === undefined) return this.incomplete(sh, col(4));
    if (is(op, 'none', 2) || is(op, 'all', 2)) {
      if (t.length > 5) return this.invalid(sh, col(5));
      port.allowed = is(op, 'none', 2) ? new Set() : 'all';
      this.afterVlanList(sh);
      return;
    }
    const verb = is(op, 'add', 1) ? 'add' : is(op, 'remove', 1) ? 'remove' : is(op, 'except', 1) ? 'except' : /^[\d,-]+$/.test(op) ? 'set' : null;
    if (!verb) return this.invalid(sh, col(4));
    const at = verb === 'set' ? 4 : 5;
    if (t[at] === undefined) return this.incomplete(sh, col(at));
    if (t.length > at + 1) return this.invalid(sh, col(at + 1));
    let list: number[];
    try {
      list = vlanRange(t[at]!, this.vlanMax);
    } catch {
      return this.badRange(sh, col(at));
    }
    if (verb !== 'remove' && this.missingVlans(sh, list)) return;
    const every = () => new Set(Array.from({ length: this.vlanMax }, (_, i) => i + 1));
    if (verb === 'set') port.allowed = new Set(list);
    else if (verb === 'except') port.allowed = new Set([...every()].filter((v) => !list.includes(v)));
    else if (verb === 'add') {
      if (port.allowed !== 'all') for (const v of list) port.allowed.add(v);
    } else {
      const cur = port.allowed === 'all' ? every() : port.allowed;
      for (const v of list) cur.delete(v);
      port.allowed = cur;
    }
    this.afterVlanList(sh);
  }

  /** `switchport trunk native vlan <id>` (plus `none` or `tag` where the CLI has them) */
  nativeVlan(sh: Shell, port: SimPort, t: string[], col: (i: number) => number): void {
    const arg = t[4];
    if (arg === undefined) return this.incomplete(sh, col(4));
    if (t.length > 5) return this.invalid(sh, col(5));
    if (/^\d+$/.test(arg)) {
      const v = Number(arg);
      if (v < 1 || v > this.vlanMax) return this.badRange(sh, col(4));
      if (!this.nativeAllowed(sh, port, v)) return;
      port.native = v;
      return;
    }
    const word = this.nativeWord(arg);
    if (!word) return this.invalid(sh, col(4));
    port.native = word;
  }

  /** the words `switchport trunk native vlan` takes beside an id */
  nativeWord(_arg: string): 'none' | 'tag' | null {
    return null;
  }

  badRange(sh: Shell, column: number): void {
    this.invalid(sh, column);
  }

  /** The port named in `show` tokens from `from` on, up to `until` (a keyword), or null. */
  portIn(tokens: string[], from: number, untilWord?: string): string | null {
    const words: string[] = [];
    for (let i = from; i < tokens.length; i++) {
      if (untilWord && is(tokens[i], untilWord, 2)) break;
      words.push(tokens[i]!);
    }
    return words.length ? this.canonical(words.join(' ')) : null;
  }

  /**
   * A VLAN list over lines of at most `width` characters, broken after a comma, the later ones
   * indented by `indent`; SimOptions.listWrap prints them flush at column 0 instead, or with
   * the comma leading the next line.
   */
  wrapList(sh: Shell, list: number[], width: number, indent: number, key = 0): string {
    const style = sh.sim.opts.listWrap ?? 'indent';
    const pad = style === 'indent' ? ' '.repeat(indent) : '';
    const parts = ranges(list).split(',');
    const lines: string[] = [];
    let cur = '';
    for (const p of parts) {
      const next = cur ? `${cur},${p}` : p;
      // the first line starts after the key (`key` characters), the others after their padding
      if (next.length + (lines.length ? pad.length : key) > width && cur) {
        lines.push(style === 'leading-comma' ? cur : `${cur},`);
        cur = style === 'leading-comma' ? `,${p}` : p;
      } else cur = next;
    }
    lines.push(cur);
    return lines.join(`\n${pad}`);
  }
}

function numbered(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}${i + 1}`);
}

class Nexus extends Cli {
  readonly name = 'Cisco Nexus (NX-OS)';
  readonly hostname = 'switch';
  override readonly banner = 'Cisco Nexus Operating System (NX-OS) Software\nTAC support: http://www.cisco.com/tac\nCopyright (c) 2002-2016, Cisco Systems, Inc. All rights reserved.\n';
  readonly pager = '--More--';
  readonly portNames = numbered('Ethernet1/', 48);
  override readonly l3Ports = true;

  canonical(typed: string): string | null {
    const m = /^e(?:t(?:h(?:e(?:r(?:n(?:e(?:t)?)?)?)?)?)?)?\s*(\d+\/\d+(?:\/\d+)?)$/i.exec(typed.trim());
    return m ? `Ethernet${m[1]}` : null;
  }

  override newPort(): SimPort {
    // NX-OS 5500 ports are layer 2 by default.
    return { switchport: true, mode: 'access', access: 1, native: 1, allowed: 'all', shutdown: false };
  }

  prompt(h: string, mode: string): string {
    return mode === 'config' ? `${h}(config)# ` : mode === 'if' ? `${h}(config-if)# ` : mode === 'vlan' ? `${h}(config-vlan)# ` : `${h}# `;
  }

  override enteredConfig(sh: Shell): void {
    sh.line('Enter configuration commands, one per line. End with CNTL/Z.');
  }

  invalid(sh: Shell, column: number): void {
    sh.line(sh.caret(column));
    sh.line("% Invalid command at '^' marker.");
  }

  incomplete(sh: Shell, column: number): void {
    sh.line(sh.caret(column));
    sh.line("% Incomplete command at '^' marker.");
  }

  override badRange(sh: Shell, column: number): void {
    sh.line(sh.caret(column));
    sh.line("% Invalid number, range is (1:4094) at '^' marker.");
  }

  denied(sh: Shell): void {
    sh.line('% Permission denied for the role');
  }

  noInterface(sh: Shell, column: number): void {
    sh.line(sh.caret(column));
    sh.line("% Invalid interface format at '^' marker.");
  }

  terminal(sh: Shell, t: string[], cmd: string): void {
    if (!(is(t[1], 'length', 2) && /^\d+$/.test(t[2] ?? '')) || t.length !== 3) return this.invalid(sh, this.column(cmd, t, 1));
    if (!sh.sim.faults.ignorePagingOff) sh.paging = t[2] !== '0';
  }

  private vlanName(sh: Shell, v: number): string {
    return v === 1 ? '1 (default)' : sh.sim.vlans.has(v) ? `${v} (VLAN${String(v).padStart(4, '0')})` : `${v} (Vlan not created)`;
  }

  async showSwitchport(sh: Shell, t: string[]): Promise<void> {
    const name = is(t[1], 'interface', 3) && is(t[t.length - 1], 'switchport', 2) ? this.portIn(t, 2, 'switchport') : null;
    if (!name) return this.invalid(sh, this.column(t.join(' '), t, 1));
    const p = sh.sim.ports.get(name);
    if (!p) return this.noInterface(sh, this.column(t.join(' '), t, 2));
    // NX-OS wraps the list at 80 columns
    const allowed = p.allowed === 'all' ? '1-4094' : p.allowed.size ? this.wrapList(sh, [...p.allowed], 80, 4, 26) : 'none';
    await sh.page([
      `Name: ${name}`,
      `  Switchport: ${p.switchport ? 'Enabled' : 'Disabled'}`,
      '  Switchport Monitor: Not enabled',
      `  Operational Mode: ${p.switchport ? p.mode : 'routed'}`,
      `  Access Mode VLAN: ${this.vlanName(sh, p.access)}`,
      `  Trunking Native Mode VLAN: ${this.vlanName(sh, p.native as number)}`,
      `  Trunking VLANs Allowed: ${allowed}`,
      '  Pruning VLANs Enabled: 2-1001',
      '  FabricPath Topology List Allowed: 0',
      '  Administrative private-vlan primary host-association: none',
      '  Administrative private-vlan secondary host-association: none',
      '  Administrative private-vlan primary mapping: none',
      '  Administrative private-vlan secondary mapping: none',
      '  Administrative private-vlan trunk native VLAN: none',
      '  Administrative private-vlan trunk encapsulation: dot1q',
      '  Administrative private-vlan trunk normal VLANs: none',
      '  Administrative private-vlan trunk private VLANs: none',
      '  Operational private-vlan: none',
      '  Unknown unicast blocked: disabled',
      '  Unknown multicast blocked: disabled',
      '',
    ]);
  }

  async showAdmin(sh: Shell, t: string[]): Promise<boolean> {
    // `show interface Ethernet1/3` (NX-OS 6 and later also print the `admin state` line)
    if (!is(t[1], 'interface', 3) || t.length < 3 || is(t[t.length - 1], 'switchport', 2)) return false;
    const name = this.portIn(t, 2);
    if (!name || !sh.sim.ports.has(name)) {
      this.noInterface(sh, this.column(t.join(' '), t, 2));
      return true;
    }
    const p = sh.sim.ports.get(name)!;
    await sh.page([
      p.shutdown ? `${name} is down (Administratively down)` : this.linked(sh, name) ? `${name} is up` : `${name} is down (Link not connected)`,
      `admin state is ${p.shutdown ? 'down' : 'up'}, Dedicated Interface`,
      '  Hardware: 100/1000/10000 Ethernet, address: 0000.5e00.5301 (bia 0000.5e00.5301)',
      '  MTU 1500 bytes, BW 10000000 Kbit, DLY 10 usec',
      '  reliability 255/255, txload 1/255, rxload 1/255',
      '  Encapsulation ARPA, medium is broadcast',
      `  Port mode is ${p.switchport ? p.mode : 'routed'}`,
      '  auto-duplex, auto-speed',
      '  Beacon is turned off',
      '  Auto-Negotiation is turned on',
      '  Last link flapped never',
      '',
    ]);
    return true;
  }

  async showMacs(sh: Shell, rows: MacRow[]): Promise<void> {
    await sh.page([
      'Legend: ',
      '        * - primary entry, G - Gateway MAC, (R) - Routed MAC, O - Overlay MAC',
      '        age - seconds since last seen,+ - primary entry using vPC Peer-Link,',
      '        (T) - True, (F) - False, C - ControlPlane MAC, ~ - vsan',
      '   VLAN     MAC Address      Type      age     Secure NTFY Ports',
      '---------+-----------------+--------+---------+------+----+------------------',
      'G    -     0000.5e00.5301   static   -         F      F    sup-eth1(R)',
      ...rows.map((r) => `*${String(r.vlan).padStart(5)}     ${dotted(r.mac)}   dynamic  0         F      F    ${r.port.replace(/^Ethernet/, 'Eth')}`),
      '',
    ]);
  }

  async showLldp(sh: Shell, t: string[], neighbors: NeighborRow[]): Promise<void> {
    if (!is(t[0], 'neighbors', 2) || !is(t[1], 'detail', 2) || t.length !== 2) return this.invalid(sh, sh.prompt().length);
    const lines = [
      'Capability codes:',
      '  (R) Router, (B) Bridge, (T) Telephone, (C) DOCSIS Cable Device',
      '  (W) WLAN Access Point, (P) Repeater, (S) Station, (O) Other',
      'Device ID            Local Intf      Hold-time  Capability  Port ID',
      '',
    ];
    for (const { port, n } of neighbors) {
      lines.push(`Chassis id: ${n.chassisId}`, `Port id: ${n.portId}`, `Local Port id: ${port.replace(/^Ethernet/, 'Eth')}`,
        'Port Description: not advertised', `System Name: ${n.systemName ?? 'not advertised'}`, 'System Description: not advertised',
        'Time remaining: 110 seconds', 'System Capabilities: S', 'Enabled Capabilities: S', 'Management Address: not advertised',
        'Vlan ID: not advertised', '');
    }
    lines.push(`Total entries displayed: ${neighbors.length}`, '');
    await sh.page(lines);
  }

  async save(sh: Shell): Promise<void> {
    sh.line('[########################################] 100%');
    sh.line('Copy complete.');
    sh.sim.saves++;
  }
}

class AristaEos extends Cli {
  readonly name = 'Arista EOS';
  readonly hostname = 'switch';
  /** VLAN 1 exists by default; all other VLANs only once configured */
  readonly factoryVlans = '1';

  /** EOS lists a VLAN that does not exist on a trunk, and forwards nothing on it. */
  carried(sim: SwitchSim, p: SimPort): CarriedVlans {
    const c = carried(p);
    return { native: c.native !== null && sim.vlans.has(c.native) ? c.native : null, tagged: c.tagged.filter((v) => sim.vlans.has(v)) };
  }
  override readonly privilegedAtLogin = false;
  readonly pager = ' --More-- ';
  readonly portNames = numbered('Ethernet', 48);
  override readonly l3Ports = true;
  override readonly writeMemory = true;

  canonical(typed: string): string | null {
    const m = /^et(?:h(?:e(?:r(?:n(?:e(?:t)?)?)?)?)?)?\s*(\d+(?:\/\d+){0,2})$/i.exec(typed.trim());
    return m ? `Ethernet${m[1]}` : null;
  }

  private short(name: string): string {
    return name.replace(/^Ethernet/, 'Et');
  }

  prompt(h: string, mode: string, iface: string, vlan: number): string {
    return mode === 'user' ? `${h}>` : mode === 'config' ? `${h}(config)#` : mode === 'if' ? `${h}(config-if-${this.short(iface)})#` : mode === 'vlan' ? `${h}(config-vlan-${vlan})#` : `${h}#`;
  }

  invalid(sh: Shell): void {
    sh.line(sh.mode === 'user' ? '% Invalid input (privileged mode required)' : '% Invalid input');
  }

  incomplete(sh: Shell): void {
    sh.line('% Incomplete command');
  }

  denied(sh: Shell, cmd: string): void {
    sh.line(`% Authorization denied for command '${cmd}'`);
  }

  noInterface(sh: Shell): void {
    sh.line('% Invalid input');
  }

  override nativeWord(arg: string): 'tag' | null {
    return is(arg, 'tag', 1) ? 'tag' : null;
  }

  terminal(sh: Shell, t: string[]): void {
    if (!(is(t[1], 'length', 2) && /^\d+$/.test(t[2] ?? '')) || t.length !== 3) return this.invalid(sh);
    if (!sh.sim.faults.ignorePagingOff) sh.paging = t[2] !== '0';
    sh.line('Pagination disabled.');
  }

  async showSwitchport(sh: Shell, t: string[]): Promise<void> {
    const name = is(t[1], 'interfaces', 3) && is(t[t.length - 1], 'switchport', 2) ? this.portIn(t, 2, 'switchport') : null;
    if (!name || !sh.sim.ports.has(name)) return this.invalid(sh);
    const p = sh.sim.ports.get(name)!;
    const mode = p.mode === 'trunk' ? 'trunk' : 'static access';
    const native = p.native === 'tag' ? 1 : (p.native as number);
    // EOS wraps the list at 80 columns too
    const allowed = p.allowed === 'all' ? 'ALL' : p.allowed.size ? this.wrapList(sh, [...p.allowed], 80, 0, 24) : 'NONE';
    const vlan = (v: number) => (v === 1 ? '1 (default)' : `${v} (VLAN${String(v).padStart(4, '0')})`);
    await sh.page([
      `Name: ${this.short(name)}`,
      `Switchport: ${p.switchport ? 'Enabled' : 'Disabled'}`,
      `Administrative Mode: ${mode}`,
      `Operational Mode: ${p.switchport ? mode : 'routed'}`,
      'MAC Address Learning: enabled',
      'Dot1q ethertype/TPID: 0x8100 (active)',
      'Dot1q Vlan Tag Required (Administrative/Operational): No/No',
      `Access Mode VLAN: ${vlan(p.access)}`,
      `Trunking Native Mode VLAN: ${vlan(native)}`,
      `Administrative Native VLAN tagging: ${p.native === 'tag' ? 'enabled' : 'disabled'}`,
      `Trunking VLANs Enabled: ${allowed}`,
      'Static Trunk Groups:',
      'Dynamic Trunk Groups:',
      'Source interface filtering: enabled',
      '',
    ]);
  }

  async showAdmin(sh: Shell, t: string[]): Promise<boolean> {
    // `show interfaces Ethernet1 status`: Status `disabled` is a shut port
    if (!is(t[1], 'interfaces', 3) || t.length < 4 || !is(t[t.length - 1], 'status', 2)) return false;
    const name = this.portIn(t, 2, 'status');
    if (!name || !sh.sim.ports.has(name)) {
      this.invalid(sh);
      return true;
    }
    const p = sh.sim.ports.get(name)!;
    const status = p.shutdown ? 'disabled' : this.linked(sh, name) ? 'connected' : 'notconnect';
    const vlan = !p.switchport ? 'routed' : p.mode === 'trunk' ? 'trunk' : String(p.access);
    await sh.page([
      // EOS cuts the description to the Name column's width
      'Port       Name             Status       Vlan     Duplex Speed  Type            Flags Encapsulation',
      `${this.short(name).padEnd(10)} ${(p.description ?? '').slice(0, 16).padEnd(16)} ${status.padEnd(12)} ${vlan.padEnd(8)} full   10G    10GBASE-T`,
      '',
    ]);
    return true;
  }

  async showMacs(sh: Shell, rows: MacRow[]): Promise<void> {
    await sh.page([
      '          Mac Address Table',
      '------------------------------------------------------------------',
      '',
      'Vlan    Mac Address       Type        Ports      Moves   Last Move',
      '----    -----------       ----        -----      -----   ---------',
      ...rows.map((r) => `${String(r.vlan).padStart(4)}    ${dotted(r.mac)}    DYNAMIC     ${this.short(r.port).padEnd(10)} 1       0:00:42 ago`),
      `Total Mac Addresses for this criterion: ${rows.length}`,
      '',
      '          Multicast Mac Address Table',
      '------------------------------------------------------------------',
      '',
      'Vlan    Mac Address       Type        Ports',
      '----    -----------       ----        -----',
      'Total Mac Addresses for this criterion: 0',
      '',
    ]);
  }

  async showLldp(sh: Shell, t: string[], neighbors: NeighborRow[]): Promise<void> {
    if (!is(t[0], 'neighbors', 2) || !is(t[1], 'detail', 2) || t.length !== 2) return this.invalid(sh);
    const lines: string[] = [];
    for (const { port, n } of neighbors) {
      lines.push(`Interface ${port} detected 1 LLDP neighbors:`, '',
        `  Neighbor ${n.chassisId}/${n.portId}, age 12 seconds`,
        '  Discovered 0:10:02 ago; Last changed 0:10:00 ago',
        '    - Chassis ID type: MAC address (4)',
        `      Chassis ID     : ${n.chassisId}`,
        '    - Port ID type: MAC address (3)',
        `      Port ID     : "${n.portId}"`,
        '    - Time To Live: 120 seconds',
        ...(n.systemName ? [`    - System Name: "${n.systemName}"`] : []),
        '');
    }
    await sh.page(lines.length ? lines : ['']);
  }

  async save(sh: Shell): Promise<void> {
    sh.line('Copy completed successfully.');
    sh.sim.saves++;
  }
}

/** Dell's two CLIs share port names. */
abstract class DellCli extends Cli {
  readonly hostname = 'console';
  readonly portNames = [...numbered('gi1/0/', 48), ...numbered('te1/0/', 4)];
  override readonly vlansMustExist = true;
  override readonly configureTerminal = false;

  canonical(typed: string): string | null {
    const m = /^(gi(?:gabitethernet)?|te(?:ngigabitethernet)?)\s*(\d+\/\d+(?:\/\d+)?)$/i.exec(typed.trim());
    return m ? `${m[1]!.slice(0, 2).toLowerCase()}${m[2]}` : null;
  }

  override newPort(): SimPort {
    return { switchport: true, mode: 'access', access: 1, native: 1, allowed: 'all', shutdown: false };
  }
}

class PowerConnect extends DellCli {
  readonly name = 'Dell PowerConnect 55xx';
  override readonly inbandLogin = true;
  readonly pager = 'More: <space>,  Quit: q or CTRL+Z, One line: <return> ';

  override newPort(): SimPort {
    // An access port of the default VLAN; a trunk starts as an untagged member of VLAN 1 only.
    return { switchport: true, mode: 'access', access: 1, native: 1, allowed: new Set([1]), shutdown: false };
  }

  override modeChanged(port: SimPort): void {
    // Changing the mode drops the port's VLAN memberships (back to the default VLAN).
    port.access = 1;
    port.native = 1;
    port.allowed = new Set([1]);
  }

  prompt(h: string, mode: string): string {
    return mode === 'config' ? `${h}(config)#` : mode === 'if' ? `${h}(config-if)#` : mode === 'vlan' ? `${h}(config-vlan)#` : `${h}#`;
  }

  invalid(sh: Shell): void {
    sh.line('% Unrecognized command');
  }

  incomplete(sh: Shell): void {
    sh.line('% Incomplete command');
  }

  override badRange(sh: Shell): void {
    sh.line('% Wrong number of parameters or invalid range, size or characters entered');
  }

  denied(sh: Shell): void {
    sh.line('% Unrecognized command');
  }

  noInterface(sh: Shell): void {
    sh.line('% Wrong number of parameters or invalid range, size or characters entered');
  }

  override noVlan(sh: Shell, missing: number[]): void {
    sh.line(`% VLAN ${ranges(missing)} is not configured`);
  }

  override nativeWord(arg: string): 'none' | null {
    return is(arg, 'none', 2) ? 'none' : null;
  }

  terminal(sh: Shell, t: string[]): void {
    if (!(is(t[1], 'datadump', 2) && t.length === 2)) return this.invalid(sh);
    if (!sh.sim.faults.ignorePagingOff) sh.paging = false;
  }

  override async command(sh: Shell, cmd: string): Promise<void | 'logout'> {
    const t = cmd.split(/\s+/);
    if ((sh.mode === 'exec') && is(t[0], 'no', 2) && is(t[1], 'terminal', 3) && is(t[2], 'datadump', 2)) {
      sh.paging = true;
      return;
    }
    // VLANs are made in `vlan database` mode (`vlan <list>` there, then `exit`)
    if (sh.mode === 'config' && is(t[0], 'vlan', 2) && is(t[1], 'database', 2) && t.length === 2 && !sh.sim.faults.failConfig) {
      sh.mode = 'vlan';
      return;
    }
    return super.command(sh, cmd);
  }

  async showSwitchport(sh: Shell, t: string[]): Promise<void> {
    const name = is(t[1], 'interfaces', 3) && is(t[2], 'switchport', 2) ? this.portIn(t, 3) : null;
    if (!name || !sh.sim.ports.has(name)) return this.invalid(sh);
    const p = sh.sim.ports.get(name)!;
    const native = p.native === 'none' ? 'none' : `${p.native}`;
    const allowed = p.allowed === 'all' ? '1-4094' : p.allowed.size ? this.wrapList(sh, [...p.allowed], 64, 24, 24) : 'none';
    await sh.page([
      `Name: ${name}`,
      'Switchport: enable',
      `Administrative Mode: ${p.mode}`,
      'Operational Mode: down',
      `Access Mode VLAN: ${p.access}`,
      'Access Multicast TV VLAN: none',
      `Trunking Native Mode VLAN: ${native}`,
      `Trunking VLANs Enabled: ${allowed}`,
      'General PVID: 1',
      'General VLANs: none',
      'General Egress Tagged VLANs: none',
      'General Forbidden VLANs: none',
      'General Ingress Filtering: enabled',
      'General Acceptable Frame Type: all',
      'General GVRP status: disabled',
      'Customer Mode VLAN: none',
      'Private-vlan promiscuous-association primary VLAN: none',
      'Private-vlan promiscuous-association Secondary VLANs: none',
      'Private-vlan host-association primary VLAN: none',
      'Private-vlan host-association Secondary VLAN: none',
      '',
      'Classification rules:',
      '',
    ]);
  }

  async showAdmin(sh: Shell, t: string[]): Promise<boolean> {
    // `show interfaces configuration gi1/0/3`: the Admin State column
    if (!is(t[1], 'interfaces', 3) || !is(t[2], 'configuration', 2)) return false;
    const name = this.portIn(t, 3);
    if (!name || !sh.sim.ports.has(name)) {
      this.noInterface(sh);
      return true;
    }
    const w = [8, 12, 6, 5, 8, 7, 8, 8, 4];
    await sh.page([
      cells(['', '', '', '', '', 'Flow', 'Admin', 'Back', 'Mdix'], w),
      cells(['Port', 'Type', 'Duplex', 'Speed', 'Neg', 'control', 'State', 'Pressure', 'Mode'], w),
      rule(w),
      cells([name, '1G-Copper', 'Full', '1000', 'Enabled', 'Off', sh.sim.ports.get(name)!.shutdown ? 'Down' : 'Up', 'Disabled', 'Auto'], w),
      '',
    ]);
    return true;
  }

  async showMacs(sh: Shell, rows: MacRow[]): Promise<void> {
    const w = [12, 21, 10, 10];
    await sh.page([
      'Flags: I - Internal usage VLAN',
      'Aging time is 300 sec',
      '',
      cells(['    Vlan', '     Mac Address', '   Port', '   Type'], w),
      rule(w),
      cells(['     1', '00:00:5e:00:53:01', '0', 'self'], w),
      ...rows.map((r) => cells([`     ${r.vlan}`, colons(r.mac), r.port, 'dynamic'], w)),
      '',
    ]);
  }

  async showLldp(sh: Shell, t: string[], neighbors: NeighborRow[]): Promise<void> {
    // `show lldp neighbors` (no `detail` keyword on this family)
    if (!is(t[0], 'neighbors', 2) || t.length !== 1) return this.invalid(sh);
    const w = [9, 17, 17, 17, 12, 5];
    await sh.page([
      'System capability supported: Bridge, Router',
      'System capability enabled: Bridge',
      '',
      cells(['  Port', '    Device ID', '    Port ID', '  System Name', 'Capabilities', 'TTL'], w),
      rule(w),
      ...neighbors.map(({ port, n }) => cells([port, n.chassisId, n.portId, n.systemName ?? '', 'S', '110'], w)),
      '',
    ]);
  }

  async save(sh: Shell): Promise<void> {
    sh.print('Overwrite file [startup-config].... (Y/N)[N] ?');
    const k = await sh.key();
    sh.line(k);
    if (k !== 'Y' && k !== 'y') {
      sh.line('Copy operation aborted.');
      return;
    }
    sh.line('01-Jan-2026 12:00:00 %COPY-I-FILECPY: Files Copy - source URL running-config destination URL flash://startup-config');
    sh.line('01-Jan-2026 12:00:01 %COPY-N-TRAP: The copy operation was completed successfully');
    sh.line('Copy succeeded');
    sh.sim.saves++;
  }
}

class DellN3000 extends DellCli {
  readonly name = 'Dell N3000 (DNOS6)';
  override readonly privilegedAtLogin = false;
  readonly pager = '--More-- or (q)uit';
  override readonly vlanMax = 4093;

  private display(name: string): string {
    return name.replace(/^gi/, 'Gi').replace(/^te/, 'Te');
  }

  prompt(h: string, mode: string, iface: string, vlan: number): string {
    return mode === 'user' ? `${h}>` : mode === 'config' ? `${h}(config)#` : mode === 'if' ? `${h}(config-if-${this.display(iface)})#` : mode === 'vlan' ? `${h}(config-vlan${vlan})#` : `${h}#`;
  }

  invalid(sh: Shell, column: number): void {
    sh.line(sh.caret(column));
    sh.line("% Invalid input detected at '^' marker.");
  }

  incomplete(sh: Shell): void {
    sh.line('Command not found / Incomplete command. Use ? to list commands.');
    sh.line('% Incomplete command');
  }

  override badRange(sh: Shell): void {
    sh.line("VLAN range - separate non-consecutive IDs with ',' and no spaces.  Use '-' for range.");
    sh.line('% Invalid VLAN range');
  }

  denied(sh: Shell): void {
    sh.line('% Command authorization failed.');
  }

  noInterface(sh: Shell): void {
    sh.line('An invalid interface has been used for this function');
    sh.line('% Invalid interface');
  }

  override noVlan(sh: Shell, missing: number[]): void {
    sh.line('');
    sh.line('          Failure Information');
    sh.line('---------------------------------------');
    sh.line(`   VLANs failed to be configured : ${missing.length}`);
    sh.line('---------------------------------------');
    sh.line('   VLAN             Error');
    sh.line('---------------------------------------');
    for (const v of missing) sh.line(`VLAN      ${String(v).padStart(4)} ERROR: This VLAN does not exist.`);
  }

  override afterVlanList(sh: Shell): void {
    sh.line('Warning: The use of large numbers of VLANs or interfaces may cause significant');
    sh.line('delays in applying the configuration.');
  }

  override nativeAllowed(sh: Shell, port: SimPort, vlan: number): boolean {
    // DNOS6 sets a trunk's native VLAN only when it exists and the trunk allows it.
    if (!sh.sim.vlans.has(vlan) || (port.allowed !== 'all' && !port.allowed.has(vlan))) {
      sh.line('Could not configure pvid.');
      return false;
    }
    return true;
  }

  terminal(sh: Shell, t: string[], cmd: string): void {
    if (!(is(t[1], 'length', 2) && /^\d+$/.test(t[2] ?? '')) || t.length !== 3) return this.invalid(sh, this.column(cmd, t, 1));
    if (!sh.sim.faults.ignorePagingOff) sh.paging = t[2] !== '0';
  }

  async showSwitchport(sh: Shell, t: string[]): Promise<void> {
    const name = is(t[1], 'interfaces', 3) && is(t[2], 'switchport', 2) ? this.portIn(t, 3) : null;
    if (!name || !sh.sim.ports.has(name)) return this.noInterface(sh);
    const p = sh.sim.ports.get(name)!;
    const def = (v: number) => (v === 1 ? '1 (default)' : `${v}`);
    const native = p.native as number;
    const allowed = p.allowed === 'all' ? 'All' : p.allowed.size ? this.wrapList(sh, [...p.allowed], 79, 29, 29) : 'none';
    const member = p.mode === 'trunk'
      ? `(${native}),${p.allowed === 'all' ? `1-${this.vlanMax}` : ranges([...p.allowed].filter((v) => v !== native)) || 'none'}`
      : `(${p.access})`;
    await sh.page([
      '',
      `Port: ${this.display(name)}`,
      `VLAN Membership Mode: ${p.mode === 'trunk' ? 'Trunk Mode' : 'Access Mode'}`,
      `Member of VLANs : ${member}`,
      `Access Mode VLAN: ${def(p.access)}`,
      'General Mode PVID: 1 (default)',
      'General Mode Ingress Filtering: Enabled',
      'General Mode Acceptable Frame Type: Admit All',
      'General Mode Dynamically Added VLANs:',
      'General Mode Untagged VLANs: 1',
      'General Mode Tagged VLANs:',
      'General Mode Forbidden VLANs:',
      `Trunking Mode Native VLAN: ${def(native)}`,
      'Trunking Mode Native VLAN Tagging: Disabled',
      `Trunking Mode VLANs Enabled: ${allowed}`,
      'Private VLAN Host Association: none',
      'Private VLAN Mapping:',
      'Private VLAN Operational Bindings:',
      'Default Priority: 0',
      'Protected: Disabled',
      '',
    ]);
  }

  async showAdmin(sh: Shell, t: string[]): Promise<boolean> {
    // `show interfaces configuration Gi1/0/3`: the Admin State column
    if (!is(t[1], 'interfaces', 3) || !is(t[2], 'configuration', 2)) return false;
    const name = this.portIn(t, 3);
    if (!name || !sh.sim.ports.has(name)) {
      this.noInterface(sh);
      return true;
    }
    const w = [9, 30, 6, 7, 4, 5, 5];
    await sh.page([
      '',
      cells(['Port', 'Description', 'Duplex', 'Speed', 'Neg', 'MTU', 'Admin'], w),
      cells(['', '', '', '', '', '', 'State'], w),
      rule(w),
      cells([this.display(name), '', 'Auto', 'Auto', 'Auto', '1518', sh.sim.ports.get(name)!.shutdown ? 'Down' : 'Up'], w),
      '',
    ]);
    return true;
  }

  async showMacs(sh: Shell, rows: MacRow[]): Promise<void> {
    const w = [8, 21, 11, 21];
    await sh.page([
      '',
      'Aging time is 300 Sec',
      '',
      cells(['Vlan', 'Mac Address', 'Type', 'Port'], w),
      rule(w),
      cells(['1', '0000.5E00.5301', 'Management', 'Vl1'], w),
      ...rows.map((r) => cells([String(r.vlan), dotted(r.mac).toUpperCase(), 'Dynamic', this.display(r.port)], w)),
      '',
      `Total MAC Addresses in use: ${rows.length + 1}`,
      '',
    ]);
  }

  async showLldp(sh: Shell, t: string[], neighbors: NeighborRow[]): Promise<void> {
    // DNOS6 has no `show lldp neighbors`: `show lldp remote-device all`
    if (!is(t[0], 'remote-device', 2) || !is(t[1], 'all', 2) || t.length !== 2) return this.invalid(sh, sh.prompt().length + 'show lldp '.length);
    const w = [9, 7, 19, 17, 17];
    await sh.page([
      '',
      'LLDP Remote Device Summary',
      '',
      'Local',
      cells(['Interface', 'RemID', 'Chassis ID', 'Port ID', 'System Name'], w),
      rule(w),
      ...neighbors.map(({ port, n }, i) => cells([this.display(port), String(i + 1), n.chassisId, n.portId, n.systemName ?? ''], w)),
      '',
    ]);
  }

  async save(sh: Shell): Promise<void> {
    sh.line('');
    sh.line('This operation may take a few minutes.');
    sh.line('Management interfaces will not be available during this time.');
    sh.line('');
    sh.print('Are you sure you want to save? (y/n) ');
    const k = await sh.key();
    sh.line(k);
    sh.line('');
    if (k !== 'y' && k !== 'Y') {
      sh.line('Configuration Not Saved!');
      return;
    }
    sh.line('Configuration Saved!');
    sh.sim.saves++;
  }
}

export const VENDORS: Record<VendorName, SimVendor> = {
  nexus: new Nexus(),
  powerconnect55xx: new PowerConnect(),
  delln3000: new DellN3000(),
  arista_eos: new AristaEos(),
  ...FABRICS,
};
