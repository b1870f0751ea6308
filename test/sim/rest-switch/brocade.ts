/**
 * A Brocade VDX's REST API (Network OS), as the simulator serves it: the interface resources of
 * one interface type under `/rest/config/running/interface/<type>/%22<port>%22` (the switchport
 * container, its mode, its trunk: allowed VLAN list, native VLAN and its tagging; the shutdown
 * leaf), the operational RPCs `get-mac-address-table` and `get-lldp-neighbor-detail` under
 * `/rest/operational-state/` (paged, `has-more`), and NOS's REST errors. Answers are XML in the
 * modules' namespaces; creating what exists is 409, deleting what is absent 404, a body it cannot
 * take 400 with an `<errors>` document.
 *
 * A port starts as NOS ships it: a layer-2 access port (`switchport`, access VLAN 1), up. A
 * trunk made by `switchport mode trunk` has no allowed list yet (which this simulator forwards as
 * every VLAN) and tags its native VLAN (`switchport trunk tag native-vlan`).
 */
import { parseXml, type XmlNode } from '../../../drivers/switch/http/xml';
import { ranges } from '../switch/model';
import { dotted, SimAnswer, SimPortBase, SimRequest, SimVendor, vlanRange } from './server';

const NS = 'urn:brocade.com:mgmt:brocade-interface';
const MAC_NS = 'urn:brocade.com:mgmt:brocade-mac-address-table';
const LLDP_NS = 'urn:brocade.com:mgmt:brocade-lldp-ext';
const REST_NS = 'http://brocade.com/ns/rest';

export interface BrocadePort extends SimPortBase {
  switchport: boolean;
  mode: 'access' | 'trunk';
  /** explicit allowed list; `unset` until configured (forwarded as every VLAN), `all` */
  allowed: Set<number> | 'unset' | 'all';
  native: number | null;
  tagNative: boolean;
}

const SHORT: Record<string, string> = { gigabitethernet: 'Gi', tengigabitethernet: 'Te', twentyfivegigabitethernet: 'Tw', fortygigabitethernet: 'Fo', hundredgigabitethernet: 'Hu' };

export interface BrocadeSimOptions {
  /** the interface type of its ports (default TenGigabitEthernet) */
  interfaceType?: string;
  /** its ports (default 101/0/1 … 101/0/48) */
  ports?: string[];
  /** rows per page of the operational tables (default 64) */
  pageSize?: number;
}

export class BrocadeVendor implements SimVendor<BrocadePort> {
  readonly name = 'brocade';
  readonly mediaType = 'application/vnd.configuration.resource+xml';
  readonly ports = new Map<string, BrocadePort>();
  readonly interfaceType: string;
  saves = 0;
  pageSize: number;
  /** LLDP not enabled: its neighbour operation is refused */
  lldpDisabled = false;
  /** the switch fails its neighbour operation (busy, a fault): 503 */
  lldpFailing = false;

  constructor(opts: BrocadeSimOptions = {}) {
    this.interfaceType = opts.interfaceType ?? 'TenGigabitEthernet';
    this.pageSize = opts.pageSize ?? 64;
    for (const p of opts.ports ?? Array.from({ length: 48 }, (_, i) => `101/0/${i + 1}`)) {
      this.ports.set(p, { switchport: true, mode: 'access', allowed: 'unset', native: null, tagNative: false, shutdown: false, macs: [] });
    }
  }

  error(status: number, message: string): SimAnswer {
    const tag = status === 404 ? 'data-missing' : status === 409 ? 'data-exists' : status === 401 ? 'access-denied' : 'invalid-value';
    return {
      status,
      body: `<errors xmlns="${REST_NS}"><error><error-type>application</error-type><error-tag>${tag}</error-tag><error-message>${esc(message)}</error-message></error></errors>`,
    };
  }

  isChange(req: SimRequest): boolean {
    return req.method !== 'GET' && !req.path.startsWith('/rest/operational-state/');
  }

  carried(port: string): { native: number | null; tagged: number[] } {
    const p = this.ports.get(port)!;
    if (!p.switchport) return { native: null, tagged: [] };
    // An access port is in the default VLAN 1, left out as every simulator's carried() leaves it.
    if (p.mode === 'access') return { native: null, tagged: [] };
    const allowed = p.allowed instanceof Set ? [...p.allowed] : Array.from({ length: 4094 }, (_, i) => i + 1);
    const native = p.native !== null && !p.tagNative ? p.native : null;
    return { native, tagged: allowed.filter((v) => v !== native).sort((a, b) => a - b) };
  }

  handle(req: SimRequest): SimAnswer {
    if (req.method === 'GET' && (req.path === '/rest' || req.path === '/rest/')) {
      return ok(`<rest xmlns="${REST_NS}"><config>/rest/config</config><operational-state>/rest/operational-state</operational-state></rest>`);
    }
    if (req.method === 'POST' && req.path === '/rest/operational-state/get-mac-address-table') return this.macTable(req.body);
    if (req.method === 'POST' && req.path === '/rest/operational-state/get-lldp-neighbor-detail') {
      if (this.lldpFailing) return this.error(503, 'Service Unavailable');
      return this.lldpDisabled ? this.error(400, '%Error: LLDP is not enabled') : this.lldp(req.body);
    }
    const m = /^\/rest\/config\/running\/interface\/([A-Za-z-]+)\/%22([0-9/]+)%22(\/[a-z/-]*)?$/.exec(req.path);
    if (!m) return this.error(404, `Resource not found: ${req.path}`);
    const port = m[1]!.toLowerCase() === this.interfaceType.toLowerCase() ? this.ports.get(m[2]!) : undefined;
    if (!port) return this.error(404, `%Error: Interface ${m[1]} ${m[2]} is not present`);
    let body: XmlNode | undefined;
    if (req.body.trim()) {
      try {
        body = parseXml(req.body);
      } catch (err) {
        return this.error(400, `Malformed XML: ${(err as Error).message}`);
      }
    }
    return this.iface(req.method, m[3] ?? '', port, body);
  }

  private iface(method: string, suffix: string, p: BrocadePort, body: XmlNode | undefined): SimAnswer {
    const key = `${method} ${suffix}`;
    if (key === 'POST ') {
      if (body?.name === 'switchport') {
        if (p.switchport) return this.error(409, 'Object already exists');
        Object.assign(p, { switchport: true, mode: 'access', allowed: 'unset', native: null, tagNative: false });
        return { status: 201 };
      }
      if (body?.name === 'shutdown') {
        if (p.shutdown) return this.error(409, 'Object already exists');
        p.shutdown = true;
        return { status: 201 };
      }
      return this.error(400, `Invalid input: <${body?.name ?? ''}>`);
    }
    if (suffix === '/shutdown') {
      if (method === 'GET') return p.shutdown ? ok(`<shutdown xmlns="${NS}">true</shutdown>`) : this.error(404, 'Resource not found');
      if (method === 'DELETE') {
        if (!p.shutdown) return this.error(404, 'Resource not found');
        p.shutdown = false;
        return { status: 204 };
      }
    }
    if (suffix.startsWith('/switchport') && !p.switchport) return this.error(404, 'Resource not found');
    switch (key) {
      case 'GET /switchport/mode':
        return ok(`<mode xmlns="${NS}"><vlan-mode>${p.mode}</vlan-mode></mode>`);
      case 'PUT /switchport/mode': {
        const mode = child(body, 'vlan-mode')?.text;
        if (body?.name !== 'mode' || (mode !== 'access' && mode !== 'trunk')) return this.error(400, 'Invalid input: vlan-mode');
        if (mode !== p.mode) Object.assign(p, { mode, allowed: 'unset', native: null, tagNative: mode === 'trunk' });
        return { status: 204 };
      }
      case 'GET /switchport/trunk': {
        if (p.mode !== 'trunk') return this.error(404, 'Resource not found');
        const allowed = p.allowed === 'unset' ? '' : p.allowed === 'all' ? '<allowed><vlan><all>true</all></vlan></allowed>'
          : p.allowed.size ? `<allowed><vlan><add>${ranges(p.allowed)}</add></vlan></allowed>` : '<allowed><vlan><none>true</none></vlan></allowed>';
        return ok(`<trunk xmlns="${NS}">${allowed}${p.tagNative ? '<tag><native-vlan>true</native-vlan></tag>' : ''}${p.native !== null ? `<native-vlan>${p.native}</native-vlan>` : ''}</trunk>`);
      }
      case 'PUT /switchport/trunk': {
        const v = vlanOf(child(body, 'native-vlan')?.text);
        if (body?.name !== 'trunk' || v === null) return this.error(400, '%Error: Invalid native VLAN');
        if (p.mode !== 'trunk') return this.error(400, '%Error: Interface is not in trunk mode');
        p.native = v;
        return { status: 204 };
      }
      case 'PUT /switchport/trunk/allowed/vlan':
        return this.allowed(p, body);
      case 'DELETE /switchport/trunk/native-vlan':
        if (p.native === null) return this.error(404, 'Resource not found');
        p.native = null;
        return { status: 204 };
      case 'DELETE /switchport/trunk/tag/native-vlan':
        if (!p.tagNative) return this.error(404, 'Resource not found');
        p.tagNative = false;
        return { status: 204 };
    }
    return this.error(405, `Method ${method} is not allowed on this resource`);
  }

  private allowed(p: BrocadePort, body: XmlNode | undefined): SimAnswer {
    if (p.mode !== 'trunk') return this.error(400, '%Error: Interface is not in trunk mode');
    const [op] = body?.name === 'vlan' ? body.children : [];
    if (!op || body!.children.length !== 1) return this.error(400, 'Invalid input: expected one of all, none, add, remove');
    let list: number[] = [];
    if (op.name === 'add' || op.name === 'remove') {
      try {
        list = vlanRange(op.text);
      } catch (err) {
        return this.error(400, `%Error: ${(err as Error).message}`);
      }
    }
    const current = p.allowed instanceof Set ? p.allowed : new Set<number>();
    if (op.name === 'all') p.allowed = 'all';
    else if (op.name === 'none') p.allowed = new Set();
    else if (op.name === 'add') p.allowed = new Set([...current, ...list]);
    else if (op.name === 'remove') p.allowed = new Set([...current].filter((v) => !list.includes(v)));
    else return this.error(400, `Invalid input: <${op.name}>`);
    return { status: 204 };
  }

  /** The learned MACs of every port that is up, in the order of the table, one page after `last-mac-address`. */
  private macTable(input: string): SimAnswer {
    const last = textAt(input, 'last-mac-address');
    const rows: string[] = [];
    for (const [name, p] of this.ports) {
      if (p.shutdown) continue;
      const vlan = p.native ?? 1;
      for (const mac of p.macs) {
        rows.push(`<mac-address-table><vlanid>${vlan}</vlanid><mac-address>${dotted(mac)}</mac-address><mac-type>dynamic</mac-type><mac-state>active</mac-state>`
          + `<forwarding-interface><interface-type>${this.interfaceType.toLowerCase()}</interface-type><interface-name>${name}</interface-name></forwarding-interface></mac-address-table>`);
      }
    }
    const start = last ? rows.findIndex((r) => r.includes(`<mac-address>${last}</mac-address>`)) + 1 : 0;
    const page = rows.slice(start, start + this.pageSize);
    return ok(`<output xmlns="${MAC_NS}">${page.join('')}<has-more>${start + this.pageSize < rows.length}</has-more></output>`);
  }

  private lldp(input: string): SimAnswer {
    const last = textAt(input, 'last-rcvd-ifindex');
    const rows: string[] = [];
    let index = 0;
    for (const [name, p] of this.ports) {
      index++;
      if (p.shutdown || !p.lldp) continue;
      rows.push(`<lldp-neighbor-detail><local-interface-name>${SHORT[this.interfaceType.toLowerCase()] ?? 'Te'} ${name}</local-interface-name>`
        + `<local-interface-ifindex>${index}</local-interface-ifindex><remote-interface-name>${esc(p.lldp.portId)}</remote-interface-name>`
        + `<remote-chassis-id>${esc(p.lldp.chassisId)}</remote-chassis-id>${p.lldp.systemName ? `<remote-system-name>${esc(p.lldp.systemName)}</remote-system-name>` : ''}`
        + '<dead-interval>120</dead-interval><remaining-life>101</remaining-life></lldp-neighbor-detail>');
    }
    const start = last ? rows.findIndex((r) => r.includes(`<local-interface-ifindex>${last}</local-interface-ifindex>`)) + 1 : 0;
    const page = rows.slice(start, start + this.pageSize);
    return ok(`<output xmlns="${LLDP_NS}">${page.join('')}<has-more>${start + this.pageSize < rows.length}</has-more></output>`);
  }
}

const ok = (body: string): SimAnswer => ({ status: 200, body });
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const child = (n: XmlNode | undefined, name: string) => n?.children.find((c) => c.name === name);
const vlanOf = (t: string | undefined) => (t !== undefined && /^\d+$/.test(t) && Number(t) >= 1 && Number(t) <= 4094 ? Number(t) : null);
const textAt = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];
