/**
 * How the data-centre switch families fail, over HTTP against their simulators: a refused
 * password, a switch that hangs or drops the connection at login, one that hangs at the first
 * configuration command, one that refuses every change, one that says yes and changes nothing,
 * and (Junos, NVUE) one that refuses the commit/apply. Each ends the operation ERROR within one
 * switch timeout with a reason that says which, the nic's networks and the switch unchanged; a
 * refused commit leaves the running configuration as it was and no candidate behind.
 */
import { expect } from 'chai';
import { Client, startTestServer, stopTestServer, TestServer, must } from '../../helpers/server';
import { FABRIC_CASES, FabricCase, RecordingClient, registration, simFor, SWITCH_PASSWORDS } from '../../helpers/switch-sims';
import type { SwitchSim } from '../../sim/switch/sim';
import { nvuePending } from '../../sim/switch/nvue';
import { loggerOptions } from '../../../src/redact';
import { failedWithin, plainFailure, timedConnect, wiredNode } from '../../helpers/switch-family';

const TIMEOUT_MS = 2000;
/** One timeout and the time to record its outcome, with room for a loaded machine; two timeouts would be 4000 */
const ONE_TIMEOUT = TIMEOUT_MS + 1500;

describe('Data-centre switch failures over HTTP (HILT_SWITCH_TIMEOUT_MS=2000)', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  const logs: string[] = [];
  const texts: string[] = [];
  let vlan = 0;
  let vlan2 = 0;
  let seq = 0;

  before(async () => {
    ts = await startTestServer({ switchTimeoutMs: TIMEOUT_MS }, { logger: loggerOptions('debug', { write: (l: string) => void logs.push(l) }) });
    api = new RecordingClient(ts.url, texts);
    await must(api.put('/project/p'));
    await must(api.put('/network/w', { owner: 'p', access: 'p', net_id: '' }));
    await must(api.put('/network/w2', { owner: 'p', access: 'p', net_id: '' }));
    const list = (await must(api.get('/networks'))).body;
    vlan = Number(list.w.network_id);
    vlan2 = Number(list.w2.network_id);
  });
  after(() => stopTestServer(ts));

  async function wired(c: FabricCase, sim: SwitchSim, over: Record<string, unknown> = {}): Promise<{ sw: string; node: string; port: string }> {
    const id = ++seq;
    const sw = `ff${id}-${c.vendor}`;
    const node = `ffn${id}`;
    const port = c.ports[0]!;
    await wiredNode(api, sw, registration(c, sim, over), port, node);
    return { sw, node, port };
  }

  const connect = (node: string, body?: Record<string, unknown>) => timedConnect(api, node, body);

  const failed = failedWithin;
  const plain = plainFailure;
  const networks = async (node: string) => (await must(api.get(`/node/${node}`))).body.nics[0].networks;

  for (const c of FABRIC_CASES) {
    describe(c.vendor, () => {
      it('a refused password: ERROR "login refused", quickly, nothing changed', async () => {
        const sim = await simFor(c, { faults: { refusePassword: true } });
        const w = await wired(c, sim);
        const r = await connect(w.node);
        failed(r, TIMEOUT_MS, /login refused for user hilt: wrong user name or password/);
        plain(r);
        expect(await networks(w.node)).to.deep.equal({});
        expect(sim.carried(w.port)).to.deep.equal(c.fresh);
      });

      it('a switch that hangs at login, or drops the connection there: ERROR within the timeout, nothing changed', async () => {
        const hung = await simFor(c, { faults: { hang: 'login' } });
        const h = await wired(c, hung);
        const r = await connect(h.node);
        failed(r, ONE_TIMEOUT, /did not finish within 2000 ms \(the login to the switch did not complete/);
        plain(r);
        const dropping = await simFor(c, { faults: { drop: 'login' } });
        const d = await wired(c, dropping);
        const r2 = await connect(d.node);
        failed(r2, ONE_TIMEOUT, /closed the (connection|session)|did not finish within/);
        expect(dropping.carried(d.port)).to.deep.equal(c.fresh);
        expect(await networks(d.node)).to.deep.equal({});
      });

      it('a session that hangs at the first configuration command: ERROR at the deadline, no set-back, the switch unchanged', async () => {
        const sim = await simFor(c, { faults: { hang: 'config' } });
        const w = await wired(c, sim);
        const r = await connect(w.node);
        failed(r, ONE_TIMEOUT, /did not finish within 2000 ms \(the switch stopped answering\)$/);
        plain(r);
        expect(sim.carried(w.port)).to.deep.equal(c.fresh);
        expect(sim.logins, 'no login to set the port back').to.equal(1);
      });

      it('a switch that refuses every change: ERROR with its own words, nothing changed', async () => {
        const sim = await simFor(c, { faults: { failConfig: true } });
        const w = await wired(c, sim);
        const r = await connect(w.node);
        failed(r, TIMEOUT_MS, /refused "[^"]+": /);
        plain(r);
        expect(sim.carried(w.port)).to.deep.equal(c.fresh);
        expect(await networks(w.node)).to.deep.equal({});
        if (c.vendor === 'cumulus_nvue') expect(nvuePending(sim), 'no pending revision left').to.equal(false);
      });

      it('a change the switch does not make: ERROR "does not read back as asked", the port set back', async () => {
        const sim = await simFor(c);
        const w = await wired(c, sim);
        expect((await connect(w.node)).s.status).to.equal('DONE');
        sim.faults.ignoreChanges = 1;
        const r = await connect(w.node, { network: 'w2', channel: `vlan/${vlan2}` });
        failed(r, TIMEOUT_MS, /does not read back as asked.*the port was set back to the configuration the service holds/);
        expect(await networks(w.node)).to.deep.equal({ 'vlan/native': 'w' });
        expect(sim.carried(w.port)).to.deep.equal({ native: vlan, tagged: [] });
      });

      if (c.commits) {
        it('a refused commit/apply: ERROR with the switch\'s words, the running configuration unchanged, no candidate left; the next one works', async () => {
          const sim = await simFor(c);
          const w = await wired(c, sim);
          expect((await connect(w.node)).s.status).to.equal('DONE');
          const commits = sim.commits;
          sim.faults.failCommit = true;
          const r = await connect(w.node, { network: 'w2', channel: `vlan/${vlan2}` });
          failed(r, TIMEOUT_MS, c.vendor === 'junos'
            ? /refused "commit and-quit": .*simulated fault.*error: configuration check-out failed; nothing was applied/
            : /refused "nv config apply -y": Invalid config \[rev_id: \d+\].*simulated fault.*; nothing was applied/);
          // nothing sent that changed the switch: no set-back
          plain(r);
          expect(sim.commits).to.equal(commits);
          expect(sim.carried(w.port)).to.deep.equal({ native: vlan, tagged: [] });
          expect(await networks(w.node)).to.deep.equal({ 'vlan/native': 'w' });
          const after = sim.received.slice(sim.received.lastIndexOf(c.vendor === 'junos' ? 'commit and-quit' : 'nv config apply -y; echo $?') + 1);
          expect(after[0], 'the candidate thrown away at once').to.equal(c.vendor === 'junos' ? 'rollback 0' : 'nv config detach; echo $?');
          if (c.vendor === 'cumulus_nvue') expect(nvuePending(sim)).to.equal(false);
          sim.faults.failCommit = false;
          expect((await connect(w.node, { network: 'w2', channel: `vlan/${vlan2}` })).s.status).to.equal('DONE');
          expect(sim.carried(w.port)).to.deep.equal({ native: vlan, tagged: [vlan2] });
        });
      }
    });
  }

  it('SONiC: answers sudo\'s password question with the login password, never logging it', async () => {
    const c = FABRIC_CASES.find((x) => x.vendor === 'sonic')!;
    const sim = await simFor(c, { sudoAsksPassword: true });
    const w = await wired(c, sim);
    expect((await connect(w.node)).s.status).to.equal('DONE');
    expect(sim.carried(w.port)).to.deep.equal({ native: vlan, tagged: [] });
  });

  describe('afterwards', () => {
    it('never shows a switch password, in any answer or log line', async () => {
      expect(texts.some((t) => /login refused/.test(t))).to.equal(true);
      for (const pw of SWITCH_PASSWORDS) {
        for (const l of logs) expect(l.includes(pw), `a log line holds a switch password: ${l}`).to.equal(false);
        for (const t of texts) expect(t.includes(pw), `an answer holds a switch password: ${t}`).to.equal(false);
      }
    });
  });
});
