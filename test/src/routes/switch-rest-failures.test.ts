/**
 * How REST switches fail, per vendor, over HTTP against the simulators: wrong credentials, an
 * unreachable switch, one that hangs (at the login, or at a change), one that drops the
 * connection, one that refuses a change with its own error, one that accepts a change and does
 * not make it, and (OS9 over HTTPS) a certificate that is not trusted. Each ends the operation
 * ERROR with a reason that says which, within one switch timeout, with the nic's networks
 * unchanged; a failure that sent the switch nothing is not followed by setting the port back, and
 * one that may have changed the port is (the port ends as the service holds it).
 */
import { expect } from 'chai';
import { Client, startTestServer, TestServer, must } from '../../helpers/server';
import { RecordingClient, SWITCH_PASSWORDS } from '../../helpers/switch-sims';
import { REST_CASES, restRegistration, restSimFor, RestCase } from '../../helpers/rest-switch-sims';
import type { AnyRestSim, Os9Sim } from '../../sim/rest-switch';
import { closedPort, failedWithin, plainFailure, timedConnect, wiredNode } from '../../helpers/switch-family';

const TIMEOUT_MS = 2000;
/** One timeout and the time to record its outcome, with room for a loaded machine; two timeouts would be 4000 */
const ONE_TIMEOUT = TIMEOUT_MS + 1500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('REST switch failures over HTTP (HILT_SWITCH_TIMEOUT_MS=2000)', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  const texts: string[] = [];
  let vlan = 0;
  let seq = 0;

  before(async () => {
    ts = await startTestServer({ switchTimeoutMs: TIMEOUT_MS });
    api = new RecordingClient(ts.url, texts);
    await must(api.put('/project/p'));
    await must(api.put('/network/w', { owner: 'p', access: 'p', net_id: '' }));
    vlan = Number((await must(api.get('/networks'))).body.w.network_id);
  });

  async function wired(c: RestCase, body: Record<string, unknown>): Promise<{ sw: string; node: string; port: string }> {
    const id = ++seq;
    const sw = `rf${id}-${c.vendor}`;
    const node = `rfn${id}`;
    const port = c.ports[id % c.ports.length]!;
    await wiredNode(api, sw, body, port, node);
    return { sw, node, port };
  }

  const connect = (node: string) => timedConnect(api, node);

  async function unchanged(node: string): Promise<void> {
    expect((await must(api.get(`/node/${node}`))).body.nics[0].networks).to.deep.equal({});
  }

  const failed = failedWithin;
  const plain = plainFailure;

  for (const c of REST_CASES) {
    describe(c.vendor, () => {
      let sim: AnyRestSim;
      before(async () => {
        sim = await restSimFor(c);
      });
      afterEach(() => {
        Object.assign(sim, { refuseCredentials: false, hang: false, hangOnly: null, drop: false, failChanges: null, ignoreChanges: false });
      });

      it('wrong credentials: ERROR "refused the credentials", quickly, nothing sent or changed', async () => {
        const wrong = `${sim.password}-but-wrong`;
        SWITCH_PASSWORDS.add(wrong);
        const w = await wired(c, restRegistration(c, sim, { password: wrong }));
        const changes = sim.changes;
        const r = await connect(w.node);
        failed(r, TIMEOUT_MS, /the switch refused the credentials of hilt \(HTTP 401\): Authentication failed/);
        plain(r);
        await unchanged(w.node);
        expect(sim.changes).to.equal(changes);
        expect(r.s.error).not.to.include(wrong);
      });

      it('an unreachable switch: ERROR "connection refused", within the timeout', async () => {
        const w = await wired(c, restRegistration(c, sim, { hostname: `${c.tls ? 'https' : 'http'}://127.0.0.1:${await closedPort()}` }));
        const r = await connect(w.node);
        failed(r, TIMEOUT_MS, /connection refused/);
        plain(r);
        await unchanged(w.node);
      });

      it('a switch that hangs: ERROR at the deadline, saying the login did not complete', async () => {
        const w = await wired(c, restRegistration(c, sim));
        sim.hang = 'all';
        const r = await connect(w.node);
        failed(r, ONE_TIMEOUT, new RegExp(`did not finish within ${TIMEOUT_MS} ms \\(the login to the switch did not complete`));
        plain(r);
        await unchanged(w.node);
      });

      it('a switch that hangs at a change: ERROR at the deadline; the port is set back afterwards', async () => {
        const w = await wired(c, restRegistration(c, sim));
        sim.hang = 'changes';
        sim.hangOnly = 1;
        const r = await connect(w.node);
        failed(r, ONE_TIMEOUT, new RegExp(`did not finish within ${TIMEOUT_MS} ms \\(the switch stopped answering\\)`));
        expect(r.s.error).to.match(/set back/);
        await unchanged(w.node);
        // The set-back runs on a new session once the hung call is cut: the port ends as the
        // service holds it (an empty trunk), which the drift audit finds in sync.
        let summary: Record<string, number> = {};
        for (let i = 0; i < 50 && summary.in_sync !== 1; i++) {
          if (i) await sleep(200);
          summary = (await must(api.get(`/admin/switch/${w.sw}/drift`))).body.summary;
        }
        expect(summary).to.deep.include({ in_sync: 1 });
        expect(sim.carried(w.port)).to.deep.equal({ native: null, tagged: [] });
      });

      it('a switch that drops the connection: ERROR "closed the connection", nothing changed', async () => {
        const w = await wired(c, restRegistration(c, sim));
        sim.drop = 'all';
        const r = await connect(w.node);
        failed(r, ONE_TIMEOUT, /the switch closed the connection without an answer/);
        plain(r);
        await unchanged(w.node);
      });

      it('a change refused with the switch\'s error: ERROR with its words, the port as it was', async () => {
        const w = await wired(c, restRegistration(c, sim));
        sim.failChanges = { status: 400, message: `%Error: VLAN ${vlan} is not configured on this switch` };
        const r = await connect(w.node);
        failed(r, ONE_TIMEOUT, new RegExp(`refused \\(HTTP 400\\): %Error: VLAN ${vlan} is not configured on this switch`));
        await unchanged(w.node);
        expect(sim.carried(w.port).native).to.equal(null);
      });

      it('a change answered and not made: ERROR "does not read back as asked"', async () => {
        const w = await wired(c, restRegistration(c, sim));
        sim.ignoreChanges = true;
        const r = await connect(w.node);
        // The first network of a port starts from a reset of it, the first change not made.
        failed(r, ONE_TIMEOUT, new RegExp(`port ${w.port.replace(/\//g, '\\/')} does not read back as asked after "reset the port"`));
        await unchanged(w.node);
      });

      if (c.vendor === 'dellnos9') {
        it('a configuration answered 200 with a "% Error" line in its output: ERROR with that line', async () => {
          const w = await wired(c, restRegistration(c, sim));
          (sim as Os9Sim).vendor.errorInOutput = '% Error: Port is part of a port-channel.';
          try {
            const r = await connect(w.node);
            failed(r, ONE_TIMEOUT, /refused: % Error: Port is part of a port-channel\./);
          } finally {
            (sim as Os9Sim).vendor.errorInOutput = null;
          }
          await unchanged(w.node);
        });

        it('a certificate the service does not trust: ERROR saying so and what to set; verify_tls false reaches it', async () => {
          const { ca_cert: _ca, ...untrusted } = restRegistration(c, sim);
          const w = await wired(c, untrusted);
          const r = await connect(w.node);
          failed(r, TIMEOUT_MS, /TLS certificate was refused because it is self-signed; give the switch's CA .* as ca_cert, or set verify_tls to false/);
          plain(r);
          const ok = await wired(c, { ...untrusted, verify_tls: false });
          expect((await connect(ok.node)).s.status).to.equal('DONE');
          expect(sim.carried(ok.port).native).to.equal(vlan);
        });
      }
    });
  }
});
