/**
 * SONiC (community) as its admin user sees it over SSH, for the `sonic` driver: the SONiC
 * banner, bash at `admin@sonic:~$`, and sonic-utilities' click commands with their usage and
 * `Error: …` texts and exit statuses: `show vlan brief` (a grid table, one row per member),
 * `show interfaces status`, `config vlan add|del`, `config vlan member add [-u]|del`, `config
 * save [-y]`, each `config` needing root (`sudo`). Changes are live (CONFIG_DB).
 *
 * A port's state (model.ts SimPort): a trunk whose allowed set is its VLAN memberships and whose
 * native is its untagged one (`none` when it has none); a factory port is in no VLAN. A member of
 * a PortChannel (`lag`, e.g. `PortChannel0001`) is in no VLAN of its own (the PortChannel is):
 * `show vlan brief` does not list it, `show interfaces status` names its PortChannel in the Vlan
 * column, and `config vlan member add` refuses it (`Error: Ethernet0 is part of portchannel!`).
 */
import { grid, ShellCli, Status } from './shell-cli';
import { ranges, SimPort } from './model';
import type { Shell } from './sim';

const USAGE: Record<string, string> = {
  'vlan add': 'config vlan add [OPTIONS] <vid>',
  'vlan del': 'config vlan del [OPTIONS] <vid>',
  'vlan member add': 'config vlan member add [OPTIONS] <vid> port',
  'vlan member del': 'config vlan member del [OPTIONS] <vid> <member>',
};

export class SonicCli extends ShellCli {
  readonly name = 'SONiC';
  readonly hostname = 'sonic';
  readonly portNames = Array.from({ length: 48 }, (_, i) => `Ethernet${i * 4}`);
  readonly factoryVlans = '';
  readonly banner = [
    '',
    'Debian GNU/Linux comes with ABSOLUTELY NO WARRANTY, to the extent',
    'permitted by applicable law.',
    '',
    'You are on',
    '  ____   ___  _   _ _  ____',
    ' / ___| / _ \\| \\ | (_)/ ___|',
    ' \\___ \\| | | |  \\| | | |',
    '  ___) | |_| | |\\  | | |___',
    ' |____/ \\___/|_| \\_|_|\\____|',
    '',
    '-- Software for Open Networking in the Cloud --',
    '',
    'Unauthorized access and/or use are prohibited.',
    'All activities on this system are monitored.',
    '',
  ].join('\n');

  newPort(): SimPort {
    return { switchport: true, mode: 'trunk', access: 1, native: 'none', allowed: new Set(), shutdown: false };
  }

  canonical(typed: string): string | null {
    return /^Ethernet\d+$/.test(typed.trim()) ? typed.trim() : null;
  }

  configures(w: string[]): boolean {
    return w[0] === 'config' && w[1] !== 'save';
  }

  changing(_sh: Shell, line: string): boolean {
    return /\bconfig (vlan member (add|del)|interface (shutdown|startup))\b/.test(line);
  }

  /** click's refusal of bad arguments: usage, hint, then the error; exit status 2 */
  private usage(sh: Shell, cmd: string, error: string): Status {
    sh.line(`Usage: ${USAGE[cmd] ?? `config ${cmd} [OPTIONS]`}`);
    sh.line(`Try "config ${cmd} -h" for help.`);
    sh.line('');
    sh.line(`Error: ${error}`);
    return 2;
  }

  async run(sh: Shell, w: string[], root: boolean): Promise<Status> {
    if (w[0] === 'show') return this.show(sh, w);
    if (w[0] !== 'config') return this.notFound(sh, w[0]!);
    if (!root) {
      sh.line('Root privileges are required for this operation');
      return 1;
    }
    if (w[1] === 'save') return this.save(sh, w);
    if (w[1] === 'interface' && (w[2] === 'shutdown' || w[2] === 'startup') && w.length === 4) {
      const p = sh.sim.ports.get(w[3]!);
      if (!p) {
        sh.line(`Error: Interface name ${w[3]} is invalid. Please enter a valid interface name!!`);
        return 2;
      }
      if (this.ignored(sh)) return 0;
      p.shutdown = w[2] === 'shutdown';
      return 0;
    }
    if (w[1] !== 'vlan') return this.usage(sh, w.slice(1, 2).join(' '), `No such command "${w[1] ?? ''}".`);
    if (w[2] === 'add' || w[2] === 'del') return this.vlan(sh, w[2], w.slice(3));
    if (w[2] === 'member' && (w[3] === 'add' || w[3] === 'del')) return this.member(sh, w[3], w.slice(4));
    return this.usage(sh, 'vlan', `No such command "${w[2] ?? ''}".`);
  }

  /** the VLAN id argument, or the click error */
  private vid(sh: Shell, cmd: string, text: string | undefined): number | Status {
    if (text === undefined) return -this.usage(sh, cmd, "Missing argument '<vid>'.");
    if (!/^\d+$/.test(text)) return -this.usage(sh, cmd, `Invalid value for '<vid>': '${text}' is not a valid integer.`);
    const v = Number(text);
    if (v < 1 || v > 4094) {
      sh.line(`Error: Invalid VLAN ID ${v} (1-4094)`);
      return -1;
    }
    return v;
  }

  private vlan(sh: Shell, verb: 'add' | 'del', args: string[]): Status {
    const cmd = `vlan ${verb}`;
    const v = this.vid(sh, cmd, args[0]);
    if (v <= 0) return -v;
    if (args.length > 1) return this.usage(sh, cmd, `Got unexpected extra argument (${args[1]})`);
    const { vlans } = sh.sim;
    if (verb === 'add') {
      if (vlans.has(v)) return this.usage(sh, cmd, `Vlan${v} already exists`);
      vlans.add(v);
      return 0;
    }
    if (!vlans.has(v)) return this.usage(sh, cmd, `Vlan${v} does not exist`);
    const members = [...sh.sim.ports.values()].some((p) => p.allowed !== 'all' && p.allowed.has(v));
    if (members) {
      sh.line(`Error: VLAN ID ${v} can not be removed. First remove all members assigned to this VLAN.`);
      return 1;
    }
    vlans.delete(v);
    return 0;
  }

  private member(sh: Shell, verb: 'add' | 'del', args: string[]): Status {
    const cmd = `vlan member ${verb}`;
    const untagged = verb === 'add' && args[0] === '-u';
    const a = untagged ? args.slice(1) : args;
    const v = this.vid(sh, cmd, a[0]);
    if (v <= 0) return -v;
    const name = a[1];
    if (name === undefined) return this.usage(sh, cmd, verb === 'add' ? "Missing argument 'port'." : "Missing argument '<member>'.");
    if (a.length > 2) return this.usage(sh, cmd, `Got unexpected extra argument (${a[2]})`);
    if (!sh.sim.vlans.has(v)) return this.usage(sh, cmd, `Vlan${v} does not exist`);
    const p = sh.sim.ports.get(name);
    if (!p) return this.usage(sh, cmd, `${name} does not exist`);
    const allowed = p.allowed as Set<number>;
    if (verb === 'add') {
      if (allowed.has(v)) return this.usage(sh, cmd, `${name} is already a member of Vlan${v}`);
      if (p.lag) return this.usage(sh, cmd, `${name} is part of portchannel!`);
      if (untagged && typeof p.native === 'number') return this.usage(sh, cmd, `${name} is already untagged member of Vlan${p.native}`);
      if (this.ignored(sh)) return 0;
      allowed.add(v);
      if (untagged) p.native = v;
      return 0;
    }
    if (!allowed.has(v)) return this.usage(sh, cmd, `${name} is not a member of Vlan${v}`);
    if (this.ignored(sh)) return 0;
    allowed.delete(v);
    if (p.native === v) p.native = 'none';
    return 0;
  }

  /** SimFaults.ignoreChanges: say yes, do nothing */
  private ignored(sh: Shell): boolean {
    if (!sh.sim.faults.ignoreChanges) return false;
    sh.sim.faults.ignoreChanges--;
    return true;
  }

  private async save(sh: Shell, w: string[]): Promise<Status> {
    if (w[2] !== '-y' && w[2] !== '--yes') {
      sh.print('Existing files will be overwritten, continue? [y/N]: ');
      const answer = await sh.readLine();
      if (!/^y(es)?$/i.test(answer.trim())) {
        sh.line('Aborted!');
        return 1;
      }
    }
    sh.line('Running command: /usr/local/bin/sonic-cfggen -d --print-data > /etc/sonic/config_db.json');
    sh.sim.saves++;
    return 0;
  }

  private show(sh: Shell, w: string[]): Status {
    const words = w.filter((x) => x !== '|' && x !== 'cat');
    if (words[1] === 'vlan' && words[2] === 'brief' && words.length === 3) {
      const rows: string[][] = [];
      for (const v of [...sh.sim.vlans].sort((a, b) => a - b)) {
        const members = [...sh.sim.ports.entries()].filter(([, p]) => p.allowed !== 'all' && p.allowed.has(v));
        if (!members.length) rows.push([String(v), '', '', '', 'disabled', '']);
        members.forEach(([name, p], i) => rows.push([i ? '' : String(v), '', name, p.native === v ? 'untagged' : 'tagged', i ? '' : 'disabled', '']));
      }
      for (const l of grid(['VLAN ID', 'IP Address', 'Ports', 'Port Tagging', 'Proxy ARP', 'DHCP Helper Address'], rows)) sh.line(l);
      return 0;
    }
    if (words[1] === 'interfaces' && words[2] === 'status') {
      const names = words[3] ? [words[3]] : [...sh.sim.ports.keys()];
      if (words[3] && !sh.sim.ports.has(words[3])) {
        sh.line(`Error: Invalid interface name ${words[3]}`);
        return 1;
      }
      const rows = names.map((n) => {
        const p = sh.sim.ports.get(n)!;
        // intfutil: a PortChannel member's Vlan cell is its PortChannel's name
        const vlan = p.lag ?? (p.allowed !== 'all' && p.allowed.size ? 'trunk' : 'routed');
        return [n, ranges([0, 1, 2, 3].map((x) => Number(n.slice(8)) + x)), '100G', '9100', 'rs', `etp${Number(n.slice(8)) / 4 + 1}`, vlan, 'down', p.shutdown ? 'down' : 'up', 'N/A', 'N/A'];
      });
      const head = ['Interface', 'Lanes', 'Speed', 'MTU', 'FEC', 'Alias', 'Vlan', 'Oper', 'Admin', 'Type', 'Asym PFC'];
      const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
      const fmt = (r: string[]) => r.map((c, i) => c.padStart(width[i]!)).join('  ');
      sh.line(fmt(head));
      sh.line(width.map((x) => '-'.repeat(x)).join('  '));
      for (const r of rows) sh.line(fmt(r));
      return 0;
    }
    if (words[1] === 'mac' && words.length === 2) {
      const rows = sh.sim.learned().macs.map((m, i) => [String(i + 1), String(m.vlan), m.mac.match(/../g)!.join(':').toUpperCase(), m.port, 'Dynamic']);
      const head = ['No.', 'Vlan', 'MacAddress', 'Port', 'Type'];
      const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
      sh.line(head.map((h, i) => h.padStart(width[i]!)).join('  '));
      sh.line(width.map((x) => '-'.repeat(x)).join('  '));
      for (const r of rows) sh.line(r.map((c, i) => c.padStart(width[i]!)).join('  '));
      sh.line(`Total number of entries ${rows.length}`);
      return 0;
    }
    if (words[1] === 'lldp' && words[2] === 'neighbors' && words.length === 3) {
      // lldpctl's own output, as SONiC's CLI prints it
      const rule = '-'.repeat(79);
      sh.line(rule);
      sh.line('LLDP neighbors:');
      sh.line(rule);
      for (const { port, n } of sh.sim.learned().neighbors) {
        sh.line(`Interface:    ${port}, via: LLDP, RID: 1, Time: 0 day, 00:01:02`);
        sh.line('  Chassis:');
        sh.line(`    ChassisID:    mac ${n.chassisId}`);
        if (n.systemName) sh.line(`    SysName:      ${n.systemName}`);
        sh.line('  Port:');
        sh.line(`    PortID:       ${/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/i.test(n.portId) ? 'mac' : 'ifname'} ${n.portId}`);
        sh.line(rule);
      }
      return 0;
    }
    sh.line('Usage: show [OPTIONS] COMMAND [ARGS]...');
    sh.line('Try "show -h" for help.');
    sh.line('');
    sh.line(`Error: No such command "${words[1] ?? ''}".`);
    return 2;
  }
}
