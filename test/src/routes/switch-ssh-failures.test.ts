/**
 * How SSH switches fail, per vendor, over HTTP against the simulators: wrong credentials, an
 * unreachable host, a hung session, a changed host key and a refused command each end the
 * operation ERROR with a reason that says which, within one switch timeout, with the nic's
 * networks and the switch port unchanged; meanwhile the service answers and other switches
 * work. A failure that sent the switch no change is not followed by setting the port back (its
 * reason says nothing of one); a switch that hangs half-way through a change ends ERROR at the
 * deadline, and the port is set back afterwards, before the nic's next operation. Also:
 * pinning a host key at registration, and an admin clearing a recorded one.
 */
import { expect } from 'chai';
import { Client, startTestServer, TestServer, must } from '../../helpers/server';
import { RecordingClient, registration, simFor, SWITCH_PASSWORDS, VENDOR_CASES } from '../../helpers/switch-sims';
import type { SwitchSim } from '../../sim/switch/sim';
import { loggerOptions } from '../../../src/redact';
import { closedPort, failedWithin, plainFailure, timedConnect, wiredNode } from '../../helpers/switch-family';

const TIMEOUT_MS = 2000;
/** One timeout and the time to record its outcome, with room for a loaded machine; two timeouts would be 4000 */
const ONE_TIMEOUT = TIMEOUT_MS + 1500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('SSH switch failures over HTTP (HILT_SWITCH_TIMEOUT_MS=2000)', function () {
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

  /** A switch of the case's type registered with `body`, one port wired to a fresh node of project p. */
  async function wired(c: (typeof VENDOR_CASES)[number], body: Record<string, unknown>): Promise<{ sw: string; node: string; port: string }> {
    const id = ++seq;
    const sw = `f${id}-${c.vendor}`;
    const node = `fn${id}`;
    const port = c.ports[0]!;
    await wiredNode(api, sw, body, port, node);
    return { sw, node, port };
  }

  const connect = (node: string, body?: Record<string, unknown>) => timedConnect(api, node, body);

  async function unchanged(node: string): Promise<void> {
    const nics = (await must(api.get(`/node/${node}`))).body.nics;
    expect(nics[0].networks).to.deep.equal({});
  }

  const failed = failedWithin;
  const plain = plainFailure;

  for (const c of VENDOR_CASES) {
    describe(c.vendor, () => {
      let good: SwitchSim;
      before(async () => {
        good = await simFor(c);
      });

      it('wrong credentials: ERROR "login refused", quickly, nothing changed', async () => {
        const wrong = `${good.password}-but-wrong`;
        SWITCH_PASSWORDS.add(wrong);
        const w = await wired(c, registration(c, good, { password: wrong }));
        const before = { ...good.carried(w.port) };
        const r = await connect(w.node);
        failed(r, TIMEOUT_MS, /login refused for user hilt: wrong user name or password/);
        plain(r);
        await unchanged(w.node);
        expect(good.carried(w.port)).to.deep.equal(before);
      });

      it('an unreachable host: ERROR "cannot reach", within the timeout, nothing changed', async () => {
        const w = await wired(c, registration(c, good, { hostname: `127.0.0.1:${await closedPort()}` }));
        const r = await connect(w.node);
        failed(r, TIMEOUT_MS, /cannot reach the switch \(connect ECONNREFUSED/);
        plain(r);
        await unchanged(w.node);
      });

      it('a switch that hangs at login: ERROR at the deadline, no set-back', async () => {
        const sim = await simFor(c, { faults: { hang: 'login' } });
        const w = await wired(c, registration(c, sim));
        const r = await connect(w.node);
        failed(r, ONE_TIMEOUT, new RegExp(`did not finish within ${TIMEOUT_MS} ms \\(the login to the switch did not complete: unreachable or not answering\\)$`));
        plain(r);
        expect(r.ms).to.be.at.least(TIMEOUT_MS);
        await unchanged(w.node);
      });

      it('a session that hangs entering the port: ERROR "did not finish" at the deadline, no set-back, the service answering and other switches working meanwhile', async () => {
        const hung = await simFor(c, { faults: { hang: 'config' } });
        const w = await wired(c, registration(c, hung));
        const other = await wired(c, registration(c, good));
        const pending = connect(w.node);
        await sleep(100);
        // Meanwhile: reads answer at once, and another switch applies an operation.
        const t0 = Date.now();
        await must(api.get('/nodes/all'));
        // (well below the switch timeout: the read did not wait for the hung switch)
        expect(Date.now() - t0).to.be.below(TIMEOUT_MS / 2);
        const o = await connect(other.node);
        expect(o.s.status, JSON.stringify(o.s)).to.equal('DONE');
        expect(good.carried(other.port)).to.deep.equal({ native: vlan, tagged: [] });
        const r = await pending;
        expect(o.ms).to.be.below(r.ms);
        // It hung at the interface command (or the N3000's dummy VLAN), before any change: one
        // timeout, and no second one spent setting back a port it never touched.
        failed(r, ONE_TIMEOUT, new RegExp(`did not finish within ${TIMEOUT_MS} ms \\(the switch stopped answering\\)$`));
        plain(r);
        expect(r.ms).to.be.at.least(TIMEOUT_MS);
        await unchanged(w.node);
        expect(hung.carried(w.port)).to.deep.equal({ native: 1, tagged: [] });
        expect(hung.received.filter((l) => /^switchport/.test(l))).to.deep.equal([]);
        expect(hung.logins, 'no login to set the port back').to.equal(1);
      });

      it('a session that hangs half-way through a change: ERROR at the deadline, then the port set back before the nic\'s next operation', async () => {
        const sim = await simFor(c);
        const w = await wired(c, registration(c, sim));
        expect((await connect(w.node)).s.status).to.equal('DONE');
        // The switch adds the VLAN, then stops answering: the port carries a VLAN the service does not hold.
        sim.faults.hangAfterChange = 1;
        const tagged = { network: 'w2', channel: `vlan/${vlan2}` };
        const r = await connect(w.node, tagged);
        failed(r, ONE_TIMEOUT, new RegExp(`did not finish within ${TIMEOUT_MS} ms \\(the switch stopped answering\\); the port is being set back to the configuration the service holds`));
        expect(r.ms).to.be.at.least(TIMEOUT_MS);
        expect((await must(api.get(`/node/${w.node}`))).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'w' });
        // The nic's next operation, at once: it comes after the set-back on the switch.
        const again = await connect(w.node, tagged);
        expect(again.s.status, JSON.stringify(again.s)).to.equal('DONE');
        const add = `switchport trunk allowed vlan add ${vlan2}`;
        const after = sim.received.slice(sim.received.indexOf(add) + 1);
        const reset = after.indexOf('switchport mode trunk');
        expect(reset, 'the set-back reset the port').to.be.at.least(0);
        expect(after.indexOf(add), 'and the next operation came after it').to.be.above(reset);
        const audit = (await must(api.get(`/admin/switch/${w.sw}/drift`))).body;
        expect(audit.ports[0].status, JSON.stringify(audit)).to.equal('in_sync');
        expect(sim.carried(w.port)).to.deep.equal({ native: vlan, tagged: [vlan2] });
      });

      it('a changed host key: ERROR naming both fingerprints, nothing changed; after an admin clears it, the new key is recorded', async () => {
        const sim = await simFor(c);
        const w = await wired(c, registration(c, sim));
        const first = await connect(w.node);
        expect(first.s.status, JSON.stringify(first.s)).to.equal('DONE');
        const old = sim.hostKey;
        expect((await must(api.get(`/switch/${w.sw}`))).body.host_key).to.equal(old);
        await must(api.post(`/node/${w.node}/nic/eth0/detach_network`, { network: 'w' }, {}), 202);
        await sleep(300);
        const carriedBefore = sim.carried(w.port);
        await sim.rotateHostKey();
        const r = await connect(w.node);
        failed(r, TIMEOUT_MS, new RegExp(`host key changed: the service recorded ${old.replace(/[+/]/g, '\\$&')}, the switch presented ${sim.hostKey.replace(/[+/]/g, '\\$&')}; nothing was changed`));
        plain(r);
        await unchanged(w.node);
        expect(sim.carried(w.port)).to.deep.equal(carriedBefore);
        expect((await must(api.get(`/switch/${w.sw}`))).body.host_key).to.equal(old);
        await must(api.del(`/switch/${w.sw}/host_key`));
        expect((await must(api.get(`/switch/${w.sw}`))).body.host_key).to.equal(null);
        const again = await connect(w.node);
        expect(again.s.status, JSON.stringify(again.s)).to.equal('DONE');
        expect((await must(api.get(`/switch/${w.sw}`))).body.host_key).to.equal(sim.hostKey);
      });

      it('a refused command: ERROR with the switch\'s own words, nothing changed', async () => {
        const sim = await simFor(c, { faults: { failConfig: true } });
        const w = await wired(c, registration(c, sim));
        const r = await connect(w.node);
        failed(r, TIMEOUT_MS, /refused "(interface |vlan )[^"]*": %/);
        plain(r);
        expect(sim.logins, 'no login to set the port back').to.equal(1);
        await unchanged(w.node);
        expect(sim.carried(w.port)).to.deep.equal({ native: 1, tagged: [] });
      });

      it('a change the switch does not make: ERROR "does not read back as asked", the port set back to the service\'s configuration', async () => {
        const sim = await simFor(c);
        const w = await wired(c, registration(c, sim));
        expect((await connect(w.node)).s.status).to.equal('DONE');
        sim.faults.ignoreChanges = 1;
        const r = await connect(w.node, { network: 'w2', channel: `vlan/${vlan2}` });
        failed(r, TIMEOUT_MS, new RegExp(`does not read back as asked after "add tagged VLAN ${vlan2}": expected trunk, native ${vlan}, allowed [^,]+, the switch shows trunk, native ${vlan}, allowed ${vlan}; the port was set back to the configuration the service holds`));
        expect((await must(api.get(`/node/${w.node}`))).body.nics[0].networks).to.deep.equal({ 'vlan/native': 'w' });
        expect(sim.carried(w.port)).to.deep.equal({ native: vlan, tagged: [] });
      });

      it('a host key pinned at registration: another key is refused, the right one used', async () => {
        const sim = await simFor(c);
        const wrong = 'SHA256:' + 'A'.repeat(43);
        const bad = await api.put(`/switch/pin-bad-${c.vendor}`, registration(c, sim, { host_key: 'md5:aa:bb' }));
        expect(bad.status, bad.text).to.equal(400);
        const w = await wired(c, registration(c, sim, { host_key: wrong }));
        expect((await must(api.get(`/switch/${w.sw}`))).body.host_key).to.equal(wrong);
        const r = await connect(w.node);
        failed(r, TIMEOUT_MS, /host key changed: the service recorded SHA256:A{43}, the switch presented SHA256:/);
        plain(r);
        expect(sim.logins).to.equal(0);
        const ok = await wired(c, registration(c, sim, { host_key: sim.hostKey }));
        expect((await connect(ok.node)).s.status).to.equal('DONE');
        expect(sim.carried(ok.port)).to.deep.equal({ native: vlan, tagged: [] });
      });
    });
  }

  // Mocha runs a suite's own tests before its nested suites: this one comes last.
  describe('afterwards', () => {
    it('never shows a switch password, in any answer (the failures\' reasons included) or log line', async () => {
      expect(texts.some((t) => /login refused/.test(t))).to.equal(true);
      for (const pw of SWITCH_PASSWORDS) {
        for (const l of logs) expect(l.includes(pw), `a log line holds a switch password: ${l}`).to.equal(false);
        for (const t of texts) expect(t.includes(pw), `an answer holds a switch password: ${t}`).to.equal(false);
      }
      expect(logs.some((l) => /switch operation failed/.test(l))).to.equal(true);
    });
  });
});
