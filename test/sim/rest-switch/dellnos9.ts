/**
 * A Dell OS9 switch's REST API (e.g. an S3048-ON), as the simulator serves it: the interface
 * resources of one interface type (`/api/running/dell/interfaces/interface/tengig-1-3`, with or
 * without `?with-defaults`: portmode hybrid, switchport, shutdown), and the CLI over REST
 * (`POST /api/running/dell/_operations/cli`) with the configuration commands VLAN membership takes
 * (`interface vlan N`, `[no] untagged|tagged <type> <port>`), the show commands hilt reads
 * (`interfaces switchport …`, `mac-address-table`, `lldp neighbors detail`, printed as OS9 prints
 * them) and `write memory`. Errors are the REST server's `<errors>` documents with the CLI's
 * `% Error:` words; a configuration stops at its first refused line, the earlier ones applied.
 *
 * OS9 is VLAN-centric: a switchport is untagged in the default VLAN 1 until it is untagged in
 * another, and goes back to it when that one is removed. A port starts as OS9 ships it: not a
 * switchport, not hybrid, shut.
 */
import { parseXml, type XmlNode } from '../../../drivers/switch/http/xml';
import { ranges } from '../switch/model';
import { SimAnswer, SimPortBase, SimRequest, SimVendor } from './server';

const NS = 'http://www.dell.com/ns/dell:0.1/root';
const ERR_NS = 'http://tail-f.com/ns/tailf-rest-error';
const CLI = '/api/running/dell/_operations/cli';
const PREFIX: Record<string, [string, string]> = {
  gigabitethernet: ['gige-', 'Gi'], tengigabitethernet: ['tengig-', 'Te'], twentyfivegigabitethernet: ['twentyfivegig-', 'Tf'],
  fortygige: ['fortygig-', 'Fo'], pegigabitethernet: ['pegig-', 'pe'], fiftygigabitethernet: ['fiftygig-', 'Fi'], hundredgigabitethernet: ['hundredgig-', 'Hu'],
};

export interface Os9Port extends SimPortBase {
  switchport: boolean;
  hybrid: boolean;
  /** untagged VLAN other than the default one */
  untagged: number | null;
  tagged: Set<number>;
}

export interface Os9SimOptions {
  /** the interface type of its ports, as the CLI names it (default TenGigabitEthernet) */
  interfaceType?: string;
  /** its ports (default 1/1 … 1/48) */
  ports?: string[];
  /** the switch's name in its prompt (default S3048-ON) */
  hostname?: string;
}

class CliError extends Error {}

export class Os9Vendor implements SimVendor<Os9Port> {
  readonly name = 'dellnos9';
  readonly mediaType = 'application/xml';
  readonly ports = new Map<string, Os9Port>();
  readonly vlans = new Set<number>([1]);
  readonly interfaceType: string;
  saves = 0;
  /** config answers carry this `% Error` line in their output, with 200 */
  errorInOutput: string | null = null;
  /** LLDP not enabled (no `protocol lldp`): its show command is refused */
  lldpDisabled = false;
  /** the switch fails its neighbour command (busy, a fault): 503 */
  lldpFailing = false;
  private readonly prefix: string;
  private readonly short: string;
  private readonly prompt: string;

  constructor(opts: Os9SimOptions = {}) {
    this.interfaceType = opts.interfaceType ?? 'TenGigabitEthernet';
    [this.prefix, this.short] = PREFIX[this.interfaceType.toLowerCase()] ?? ['tengig-', 'Te'];
    this.prompt = `${opts.hostname ?? 'S3048-ON'}#`;
    for (const p of opts.ports ?? Array.from({ length: 48 }, (_, i) => `1/${i + 1}`)) {
      this.ports.set(p, { switchport: false, hybrid: false, untagged: null, tagged: new Set(), shutdown: true, macs: [] });
    }
  }

  error(status: number, message: string): SimAnswer {
    const tag = status === 401 ? 'access-denied' : status === 404 ? 'data-missing' : status === 400 ? 'malformed-message' : 'operation-failed';
    return { status, body: `<errors xmlns="${ERR_NS}"><error><error-tag>${tag}</error-tag><error-message>${esc(message)}</error-message></error></errors>` };
  }

  isChange(req: SimRequest): boolean {
    return req.method !== 'GET' && !(req.path === CLI && req.body.includes('<show-command>'));
  }

  carried(port: string): { native: number | null; tagged: number[] } {
    const p = this.ports.get(port)!;
    if (!p.switchport) return { native: null, tagged: [] };
    return { native: p.untagged, tagged: [...p.tagged].sort((a, b) => a - b) };
  }

  handle(req: SimRequest): SimAnswer {
    if (req.method === 'GET' && req.path === '/api') {
      return ok('<api xmlns="http://tail-f.com/ns/rest"><version>0.5</version><config/><running/><operational/><operations/><rollbacks/></api>');
    }
    let body: XmlNode | undefined;
    if (req.body.trim()) {
      try {
        body = parseXml(req.body);
      } catch (err) {
        return this.error(400, `Malformed XML: ${(err as Error).message}`);
      }
    }
    if (req.method === 'POST' && req.path === CLI) return this.cli(body);
    const m = /^\/api\/running\/dell\/interfaces\/interface\/([a-z]+-)(\d+(?:-\d+)+)(\?with-defaults)?$/.exec(req.path);
    const name = m && m[1] === this.prefix ? m[2]!.replace(/-/g, '/') : undefined;
    const port = name === undefined ? undefined : this.ports.get(name);
    if (!m || !port) return this.error(404, `resource not found: ${req.path}`);
    if (req.method === 'GET') return ok(this.interfaceXml(m[1]! + m[2]!, port, m[3] !== undefined));
    if (req.method === 'PUT') return this.put(m[1]! + m[2]!, name!, port, body);
    return this.error(405, `method ${req.method} not allowed`);
  }

  private interfaceXml(name: string, p: Os9Port, defaults: boolean): string {
    const hybrid = p.hybrid || defaults ? `<portmode><hybrid>${p.hybrid}</hybrid></portmode>` : '';
    const shutdown = !p.shutdown || defaults ? `<shutdown>${p.shutdown}</shutdown>` : '';
    return `<interface xmlns="${NS}"><name>${name}</name>${hybrid}${p.switchport ? '<switchport></switchport>' : ''}${shutdown}${defaults ? '<mtu>1554</mtu>' : ''}</interface>`;
  }

  private put(name: string, port: string, p: Os9Port, body: XmlNode | undefined): SimAnswer {
    if (body?.name !== 'interface' || child(body, 'name')?.text !== name) return this.error(400, `the body must be <interface> named ${name}`);
    const hybrid = child(child(body, 'portmode'), 'hybrid')?.text === 'true';
    const switchport = child(body, 'switchport') !== undefined;
    const shutdown = child(body, 'shutdown')?.text !== 'false';
    if (p.switchport && switchport && p.hybrid !== hybrid) return this.error(400, `% Error: Port is in Layer 2 mode ${this.short} ${port}.`);
    if (!switchport) {
      p.untagged = null;
      p.tagged.clear();
    }
    Object.assign(p, { hybrid, switchport, shutdown });
    return { status: 204 };
  }

  private cli(body: XmlNode | undefined): SimAnswer {
    const [cmd] = body?.name === 'input' ? body.children : [];
    if (!cmd) return this.error(400, 'expected <input> with config-commands, show-command or exec-command');
    const lines = cmd.text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
    try {
      if (cmd.name === 'config-commands') {
        let vlan: number | null = null;
        for (const line of lines) vlan = this.config(line, vlan);
        return ok(`<output xmlns="${NS}">${this.errorInOutput ? `<command>${esc(`${this.errorInOutput}\r\n`)}</command>` : ''}</output>`);
      }
      if (cmd.name === 'show-command' && lines[0] === 'lldp neighbors detail' && this.lldpFailing) return this.error(503, 'Service Unavailable');
      if (cmd.name === 'show-command' && lines.length === 1) return this.output(`show ${lines[0]}`, this.show(lines[0]!));
      if (cmd.name === 'exec-command' && /^write( memory)?$/.test(lines[0] ?? '')) {
        this.saves++;
        return this.output(lines[0]!, '!\r\nCopy completed.');
      }
    } catch (err) {
      if (err instanceof CliError) return this.error(400, err.message);
      throw err;
    }
    return this.error(400, `% Error: Invalid input at "^" marker.`);
  }

  private output(command: string, text: string): SimAnswer {
    return ok(`<output xmlns="${NS}"><command>${esc(`${command}\r\n\r\n${text}\r\n\r\n${this.prompt}`)}</command></output>`);
  }

  /** One configuration line in the context of `vlan` (the `interface vlan` entered, if any): the next context. */
  private config(line: string, vlan: number | null): number | null {
    const iv = /^interface vlan (\d+)$/i.exec(line);
    if (iv) {
      const v = Number(iv[1]);
      if (v < 1 || v > 4094) throw new CliError(`% Error: Invalid VLAN ID ${iv[1]}.`);
      this.vlans.add(v);
      return v;
    }
    if (/^(exit|end)$/.test(line)) return null;
    const m = /^(no )?(untagged|tagged) (\S+) (\S+)$/i.exec(line);
    if (!m || vlan === null) throw new CliError(`% Error: Invalid input at "^" marker. (${line})`);
    const p = m[3]!.toLowerCase() === this.interfaceType.toLowerCase() ? this.ports.get(m[4]!) : undefined;
    if (!p) throw new CliError(`% Error: No such interface ${m[3]} ${m[4]}.`);
    const where = `${this.short} ${m[4]}`;
    if (!p.switchport) throw new CliError(`% Error: ${where} Port is not in Layer-2 mode.`);
    const no = m[1] !== undefined;
    if (m[2]!.toLowerCase() === 'untagged') {
      if (no) {
        if (p.untagged !== vlan) throw new CliError(`% Error: ${where} is not an untagged member of Vlan ${vlan}.`);
        p.untagged = null;
      } else {
        if (p.untagged !== null && p.untagged !== vlan) throw new CliError(`% Error: ${where} Port is untagged in another Vlan.`);
        if (!p.hybrid && p.tagged.size) throw new CliError(`% Error: ${where} Port is tagged; untagged membership needs portmode hybrid.`);
        p.tagged.delete(vlan);
        p.untagged = vlan === 1 ? null : vlan;
      }
    } else if (no) {
      if (!p.tagged.has(vlan)) throw new CliError(`% Error: ${where} is not a tagged member of Vlan ${vlan}.`);
      p.tagged.delete(vlan);
    } else {
      if (!p.hybrid && p.untagged !== null) throw new CliError(`% Error: ${where} Port is untagged; tagged membership needs portmode hybrid.`);
      if (p.untagged === vlan) throw new CliError(`% Error: ${where} Port is untagged in Vlan ${vlan}.`);
      p.tagged.add(vlan);
    }
    return vlan;
  }

  private show(command: string): string {
    const sw = /^interfaces switchport (\S+) (\S+)$/i.exec(command);
    if (sw) {
      const p = sw[1]!.toLowerCase() === this.interfaceType.toLowerCase() ? this.ports.get(sw[2]!) : undefined;
      if (!p) throw new CliError(`% Error: No such interface ${sw[1]} ${sw[2]}.`);
      if (!p.switchport) throw new CliError(`% Error: ${this.short} ${sw[2]} Port is not in Layer-2 mode.`);
      const tagged = ranges(p.tagged);
      // Long lists wrap, as the CLI wraps them.
      const wrapped = tagged.replace(/(.{1,40})(,|$)/g, (_, chunk: string, comma: string) => `${chunk}${comma}\n`).trim().split('\n');
      const mode = p.hybrid ? 'Hybrid' : p.tagged.size ? 'True' : 'False';
      return [
        'Codes:  U - Untagged, T - Tagged',
        '        x - Dot1x untagged, X - Dot1x tagged',
        '        G - GVRP tagged, M - Vlan-stack, H - VSN tagged',
        '        i - Internal untagged, I - Internal tagged, v - VLT untagged, V - VLT tagged',
        '',
        `Name: ${this.interfaceType} ${sw[2]}`,
        `802.1QTagged: ${mode}`,
        'Vlan membership:',
        'Q       Vlans',
        `U       ${p.untagged ?? 1}`,
        ...(p.tagged.size ? [`T       ${wrapped[0]}`, ...wrapped.slice(1).map((l) => `        ${l}`)] : []),
        '',
        `Native VlanId: ${p.untagged ?? 1}.`,
      ].join('\r\n');
    }
    if (command === 'mac-address-table') {
      const rows = ['Codes: *N - VLT Peer Synced MAC', '*I - Internal MAC Address used for Inter Process Communication',
        'VlanId     Mac Address           Type          Interface        State'];
      for (const [name, p] of this.ports) {
        if (p.shutdown || !p.switchport) continue;
        for (const mac of p.macs) rows.push(` ${String(p.untagged ?? 1).padEnd(10)}${mac.padEnd(22)}${'Dynamic'.padEnd(14)}${`${this.short} ${name}`.padEnd(17)}Active`);
      }
      return rows.join('\r\n');
    }
    if (command === 'lldp neighbors detail') {
      if (this.lldpDisabled) throw new CliError('% Error: LLDP is not enabled.');
      const out: string[] = [];
      for (const [name, p] of this.ports) {
        if (p.shutdown || !p.lldp) continue;
        out.push('========================================================================',
          ` Local Interface ${this.short} ${name} has 1 neighbor`, '  Total Frames Out: 1421', '  Total Frames In: 1409',
          '  Remote Chassis ID Subtype: Mac address (4)', `  Remote Chassis ID:  ${p.lldp.chassisId}`,
          '  Remote Port Subtype:  Mac address (3)', `  Remote Port ID:  ${p.lldp.portId}`,
          `  Local Port ID: ${this.interfaceType} ${name}`, '  Remote TTL:  120', '  Information valid for next 105 seconds',
          ...(p.lldp.systemName ? [`  Remote System Name:  ${p.lldp.systemName}`] : []),
          ' ---------------------------------------------------------------------------');
      }
      return out.join('\r\n');
    }
    throw new CliError(`% Error: Invalid input at "^" marker. (show ${command})`);
  }
}

const ok = (body: string): SimAnswer => ({ status: 200, body });
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const child = (n: XmlNode | undefined, name: string) => n?.children.find((c) => c.name === name);
