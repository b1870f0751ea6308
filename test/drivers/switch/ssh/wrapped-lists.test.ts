/**
 * A port's VLANs read from `show … switchport` whatever way the switch wraps a long allowed
 * list: a property over random VLAN sets, wrapped at random widths at a list separator, each
 * continuation line indented, flush at column 0, or led by the comma. Every VLAN on the port
 * must be read, and none that is not: one missed is a VLAN a removal skips (another tenant's
 * network left on the port). Then over SSH against the simulators: the same lists with a log
 * message inside them and the pager between their lines, and prompts printed again after a log
 * message (synchronous logging), which must not put the session out of step with its commands.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import type { SwitchTable, TableContext } from '../../../../drivers/switch/ssh/table';
import { NEXUS_TABLE } from '../../../../drivers/switch/nexus';
import { ARISTA_EOS_TABLE } from '../../../../drivers/switch/arista-eos';
import { DELL_N3000_TABLE } from '../../../../drivers/switch/delln3000';
import { POWERCONNECT_TABLE } from '../../../../drivers/switch/powerconnect55xx';
import { formatVlanList } from '../../../../drivers/switch/vlans';
import { CliSwitchDriver } from '../../../../drivers/switch/ssh/driver';
import { SWITCH_DRIVERS } from '../../../../drivers/switch';
import { simFor, VENDOR_CASES } from '../../../helpers/switch-sims';
import type { SimPort } from '../../../sim/switch/model';

type Style = 'indent' | 'flush' | 'leading-comma';

/** `key` and the list as ranges over lines of at most `width` characters, broken at commas only. */
function wrapped(key: string, list: number[], width: number, style: Style, indent: number): string[] {
  const parts = formatVlanList(list).split(',');
  const pad = style === 'indent' ? ' '.repeat(indent) : '';
  const lines: string[] = [];
  let cur = `${key}${parts[0]}`;
  for (const p of parts.slice(1)) {
    if (`${cur},${p}`.length > width) {
      lines.push(style === 'leading-comma' ? cur : `${cur},`);
      cur = style === 'leading-comma' ? `${pad},${p}` : `${pad}${p}`;
    } else cur = `${cur},${p}`;
  }
  lines.push(cur);
  return lines;
}

interface Vendor { table: SwitchTable; port: string; ctx: TableContext; output(allowed: string[]): string }

const VENDORS: Record<string, Vendor> = {
  nexus: {
    table: NEXUS_TABLE, port: 'Ethernet1/3', ctx: { dummyVlan: 3999 },
    output: (allowed) => ['Name: Ethernet1/3', '  Switchport: Enabled', '  Operational Mode: trunk', '  Access Mode VLAN: 1 (default)',
      '  Trunking Native Mode VLAN: 3999 (VLAN3999)', ...allowed, '  Pruning VLANs Enabled: 2-1001', '  Voice VLAN: none', ''].join('\n'),
  },
  arista_eos: {
    table: ARISTA_EOS_TABLE, port: 'Ethernet3', ctx: {},
    output: (allowed) => ['Name: Et3', 'Switchport: Enabled', 'Administrative Mode: trunk', 'Operational Mode: trunk', 'Access Mode VLAN: 1 (default)',
      'Trunking Native Mode VLAN: 1 (default)', 'Administrative Native VLAN tagging: enabled', ...allowed, 'Static Trunk Groups:',
      'Dynamic Trunk Groups:', 'Source interface filtering: enabled', ''].join('\n'),
  },
  powerconnect55xx: {
    table: POWERCONNECT_TABLE, port: 'gi1/0/3', ctx: {},
    output: (allowed) => ['Name: gi1/0/3', 'Switchport: enable', 'Administrative Mode: trunk', 'Operational Mode: down', 'Access Mode VLAN: 1',
      'Trunking Native Mode VLAN: none', ...allowed, 'General PVID: 1', '', 'Classification rules:', ''].join('\n'),
  },
  delln3000: {
    table: DELL_N3000_TABLE, port: 'gi1/0/3', ctx: { dummyVlan: 3999 },
    output: (allowed) => ['', 'Port: Gi1/0/3', 'VLAN Membership Mode: Trunk Mode', 'Access Mode VLAN: 1 (default)', 'Trunking Mode Native VLAN: 3999',
      'Trunking Mode Native VLAN Tagging: Disabled', ...allowed, 'Private VLAN Host Association: none', 'Protected: Disabled', ''].join('\n'),
  },
};

const KEYS: Record<string, string> = {
  nexus: '  Trunking VLANs Allowed: ', arista_eos: 'Trunking VLANs Enabled: ', powerconnect55xx: 'Trunking VLANs Enabled: ', delln3000: 'Trunking Mode VLANs Enabled: ',
};

/** A VLAN set of 1 to 300 VLANs, often with runs (ranges), never every VLAN. */
const vlanSet = fc.array(fc.tuple(fc.integer({ min: 2, max: 4090 }), fc.integer({ min: 0, max: 4 })), { minLength: 1, maxLength: 300 })
  .map((xs) => [...new Set(xs.flatMap(([v, run]) => Array.from({ length: run + 1 }, (_, i) => v + i)))].sort((a, b) => a - b));

describe('switch tables: a long allowed list, however the switch wraps it', () => {
  for (const [name, v] of Object.entries(VENDORS)) {
    it(`${name}: reads every VLAN of the list, and none beside`, () => {
      fc.assert(fc.property(vlanSet, fc.integer({ min: 40, max: 100 }), fc.constantFrom<Style>('indent', 'flush', 'leading-comma'), fc.integer({ min: 1, max: 30 }),
        (list, width, style, indent) => {
          const out = v.output(wrapped(KEYS[name]!, list, width, style, indent));
          const r = v.table.parse(out, v.port, v.ctx);
          expect(r.mode).to.equal('trunk');
          expect(r.allowed).to.deep.equal(list);
        }), { numRuns: 300 });
    });
  }

  // What a terminal with log messages on (`terminal monitor`) may show between two lines of output.
  const LOG_LINES = [
    '2026 Jan  1 12:00:00 switch %ETHPORT-5-IF_UP: Interface Ethernet1/5 is up in mode trunk',
    'Jan  1 12:00:00 switch Ebra: %LINEPROTO-5-UPDOWN: Line protocol on Interface Ethernet5 (server 7), changed state to up',
    '01-Jan-2026 12:00:00 %LINK-I-Up:  gi1/0/5',
    '%LINK-W-Down:  gi1/0/5',
    '<189> Jan 1 12:00:00 127.0.0.1-1 TRAPMGR[trapTask]: traputil.c(721) 31 %% Link Up: Gi1/0/5',
  ];
  for (const [name, v] of Object.entries(VENDORS)) {
    it(`${name}: a log message printed between two lines of the output changes nothing`, () => {
      fc.assert(fc.property(vlanSet, fc.integer({ min: 40, max: 100 }), fc.constantFrom<Style>('indent', 'flush', 'leading-comma'), fc.constantFrom(...LOG_LINES), fc.nat(),
        (list, width, style, log, at) => {
          const lines = v.output(wrapped(KEYS[name]!, list, width, style, 4)).split('\n');
          const i = 1 + (at % (lines.length - 1));
          const out = [...lines.slice(0, i), log, ...lines.slice(i)].join('\n');
          expect(v.table.parse(out, v.port, v.ctx).allowed).to.deep.equal(list);
        }), { numRuns: 300 });
    });
  }

  it('Nexus: a list wrapped flush at column 0 (as NX-OS prints past 80 columns)', () => {
    const out = VENDORS.nexus!.output(['  Trunking VLANs Allowed: 1001-1003,1005,1010-1012,1020,1030,1040,1050,1060,1070,', '1080,2000-2002']);
    expect(NEXUS_TABLE.parse(out, 'Ethernet1/3', { dummyVlan: 3999 }).allowed).to.deep.equal(
      [1001, 1002, 1003, 1005, 1010, 1011, 1012, 1020, 1030, 1040, 1050, 1060, 1070, 1080, 2000, 2001, 2002]);
  });

  it('refuses a list cut short (it ends in a separator): some VLANs would go unread', () => {
    const out = VENDORS.arista_eos!.output(['Trunking VLANs Enabled: 1001-1003,1005,']);
    expect(() => ARISTA_EOS_TABLE.parse(out, 'Ethernet3', {})).to.throw(/cut short|not a VLAN/);
    const cut = VENDORS.nexus!.output(['  Trunking VLANs Allowed: 1001-']);
    expect(() => NEXUS_TABLE.parse(cut, 'Ethernet1/3', { dummyVlan: 3999 })).to.throw(/cut short|not a VLAN/);
  });
});

describe('SSH switch sessions: a long allowed list over SSH, however the simulator wraps it, with a log message and pager prompts in it', function () {
  this.timeout(30_000);
  const LOGS: Record<string, string> = {
    nexus: '2026 Jan  1 12:00:00 switch %ETHPORT-5-IF_UP: Interface Ethernet1/5 is up in mode trunk',
    arista_eos: 'Jan  1 12:00:00 switch Ebra: %LINEPROTO-5-UPDOWN: Line protocol on Interface Ethernet5, changed state to up',
    powerconnect55xx: '%LINK-W-Down:  gi1/0/5',
    delln3000: '<189> Jan 1 12:00:00 127.0.0.1-1 TRAPMGR[trapTask]: traputil.c(721) 31 %% Link Up: Gi1/0/5',
  };
  const NONE: Record<string, SimPort['native']> = { nexus: 3999, delln3000: 3999, powerconnect55xx: 'none', arista_eos: 'tag' };
  // Every other VLAN from 1002 to 1198 (99 items, over several lines), the last one a tenant's.
  const many = Array.from({ length: 99 }, (_, i) => 1002 + 2 * i);

  for (const c of VENDOR_CASES) {
    for (const listWrap of ['indent', 'flush', 'leading-comma'] as const) {
      it(`${c.vendor}, continuation lines ${listWrap}: reads every VLAN, and removes one past the wrap`, async () => {
        // A log message inside the wrapped list, and a pager every 4 lines (the command turning it off is refused).
        const sim = await simFor(c, { listWrap, vlans: '1-4093', logLine: LOGS[c.vendor], pageLines: 5, faults: { ignorePagingOff: true } });
        const port = c.ports[1]!;
        Object.assign(sim.portState(port), { mode: 'trunk', native: NONE[c.vendor], allowed: new Set(many) });
        const entry = SWITCH_DRIVERS.find((e) => e.type === c.type)!;
        const driver = new CliSwitchDriver((entry.create({ settings: {} as never }) as CliSwitchDriver).table, { save: false, readyTimeoutMs: 5000 });
        const s = await driver.open({ name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password, ...c.extra } }, new AbortController().signal);
        try {
          expect((await s.getPortVlans(port)).tagged).to.deep.equal(many);
          await s.removeTagged(port, 1198);
          expect(sim.carried(port).tagged).to.deep.equal(many.slice(0, -1));
        } finally {
          await s.close(AbortSignal.timeout(5000));
        }
      });
    }
  }
});

describe('SSH switch sessions: a prompt printed again after a log message (synchronous logging)', function () {
  this.timeout(30_000);
  for (const c of VENDOR_CASES) {
    it(`${c.vendor}: is not taken for the end of the next command, whose output stays its own`, async () => {
      const sim = await simFor(c, { vlans: '1-4093' });
      const [a, b, d] = [c.ports[0]!, c.ports[1]!, c.ports[2]!];
      for (const [p, v] of [[a, 1001], [b, 1002], [d, 1003]] as const) Object.assign(sim.portState(p), { mode: 'trunk', native: 'none', allowed: new Set([v]) });
      if (c.vendor !== 'powerconnect55xx') for (const p of [a, b, d]) sim.portState(p).native = c.vendor === 'arista_eos' ? 'tag' : 3999;
      const entry = SWITCH_DRIVERS.find((e) => e.type === c.type)!;
      const driver = new CliSwitchDriver((entry.create({ settings: {} as never }) as CliSwitchDriver).table, { save: false, readyTimeoutMs: 5000 });
      const s = await driver.open({ name: 'sw', type: c.type, fields: { hostname: sim.address, username: sim.username, password: sim.password, ...c.extra } }, new AbortController().signal);
      try {
        expect((await s.getPortVlans(a)).tagged).to.deep.equal([1001]);
        // The prompts after the next reads are printed again, a moment after the command's end.
        sim.faults.reprintPrompt = 3;
        expect((await s.getPortVlans(b)).tagged).to.deep.equal([1002]);
        expect((await s.getPortVlans(d)).tagged).to.deep.equal([1003]);
        await s.addTagged(a, 1004);
        expect(sim.carried(a).tagged).to.deep.equal([1001, 1004]);
        expect((await s.getPortVlans(a)).tagged).to.deep.equal([1001, 1004]);
      } finally {
        await s.close(AbortSignal.timeout(5000));
      }
    });
  }
});
