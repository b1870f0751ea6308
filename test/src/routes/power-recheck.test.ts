/**
 * Power calls check again, when their turn at the BMC comes, that the caller may still act on
 * the node (issue 11 item 7): a call waits behind earlier ones to the same BMC, and meanwhile
 * the node may leave the project, the caller lose its membership, the node be deleted.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeUser, Creds } from '../../helpers/server';
import type { ObmDriver, ObmDriverEntry, PowerState } from '../../../drivers/obm/types';
import type { DriverFields } from '../../../drivers/registry';

/** A BMC whose calls wait for release(); it records the calls that reached it. */
class GatedBmc implements ObmDriver {
  readonly calls: string[] = [];
  private gate: Promise<void> = Promise.resolve();
  private open: () => void = () => undefined;

  hold(): void {
    this.gate = new Promise((r) => (this.open = r));
  }

  release(): void {
    this.open();
  }

  private async call(what: string, fields: DriverFields): Promise<void> {
    this.calls.push(`${what} ${fields.host}`);
    await this.gate;
  }

  powerCycle = (f: DriverFields) => this.call('cycle', f);
  powerOff = (f: DriverFields) => this.call('off', f);
  powerOn = (f: DriverFields) => this.call('on', f);
  setBootDevice = (f: DriverFields) => this.call('bootdev', f);
  powerStatus = async (f: DriverFields): Promise<PowerState> => {
    await this.call('status', f);
    return 'on';
  };
}

const gated: ObmDriverEntry<GatedBmc> = {
  type: 'http://schema.massopencloud.org/haas/v0/obm/test-gated',
  extension: 'test.obm.gated',
  fields: { type: 'object', additionalProperties: false, required: ['host', 'user', 'password'], properties: { host: { type: 'string' }, user: { type: 'string' }, password: { type: 'string' } } },
  create: () => new GatedBmc(),
  device: (fields) => String(fields.host),
};

describe('power calls check the caller again when their turn at the BMC comes', function () {
  this.timeout(30_000);
  let ts: TestServer;
  let api: Client;
  let member: Creds;
  const bmc = () => ts.drivers.obm.driver(gated.type) as GatedBmc;
  const obm = { type: gated.type, host: 'bmc-shared', user: 'gate-user', password: 'gate-pw' };

  before(async () => {
    // The BMC hears only the calls raced here: a release does not power the node off (test/src/lifecycle/release.test.ts).
    ts = await startTestServer({ releasePowerOff: false }, { extraDrivers: { obm: [gated] } });
    api = ts.api;
    await must(api.put('/project/P'));
    member = await makeUser(api, 'mem', 'mem-pw', ['P']);
    for (const n of ['busy', 'target']) await must(api.put(`/node/${n}`, { obm }));
    await must(api.post('/project/P/connect_node', { node: 'target' }));
  });
  after(() => stopTestServer(ts));

  /** Holds the BMC with an admin's call on `busy`, queues `queued`, does `meanwhile`, then lets the BMC go. */
  async function race(queued: () => Promise<{ status: number; text: string }>, meanwhile: () => Promise<unknown>) {
    bmc().hold();
    const first = api.post('/node/busy/power_off');
    while (bmc().calls.length === 0) await new Promise((r) => setTimeout(r, 2));
    const second = queued();
    await new Promise((r) => setTimeout(r, 50));
    await meanwhile();
    const before = bmc().calls.length;
    bmc().release();
    const [a, b] = await Promise.all([first, second]);
    expect(a.status).to.equal(200);
    return { answer: b, reached: bmc().calls.slice(before) };
  }

  it('a member\'s call still allowed at its turn goes through', async () => {
    const { answer, reached } = await race(() => api.with(member).post('/node/target/power_cycle'), async () => undefined);
    expect(answer.status, answer.text).to.equal(200);
    expect(reached).to.deep.equal(['cycle bmc-shared']);
  });

  it('the node left the member\'s project meanwhile: 401, and nothing reaches the BMC', async () => {
    const { answer, reached } = await race(() => api.with(member).post('/node/target/power_off'), () => must(api.post('/project/P/detach_node', { node: 'target' })));
    expect(answer.status, answer.text).to.equal(401);
    expect(answer.text).to.not.include('bmc-shared').and.to.not.include('gate-user');
    expect(reached).to.deep.equal([]);
    await must(api.post('/project/P/connect_node', { node: 'target' }));
  });

  it('the member was removed from the project meanwhile: 401 (status and boot device too)', async () => {
    for (const call of [() => api.with(member).get('/node/target/power_status'), () => api.with(member).put('/node/target/boot_device', { bootdev: 'disk' })]) {
      const { answer, reached } = await race(call, () => must(api.post('/auth/basic/user/mem/remove_project', { project: 'P' })));
      expect(answer.status, answer.text).to.equal(401);
      expect(reached).to.deep.equal([]);
      await must(api.post('/auth/basic/user/mem/add_project', { project: 'P' }));
    }
  });

  it('the node was deleted (and registered again) meanwhile: 404, even for an admin', async () => {
    await must(api.put('/node/gone', { obm }));
    const { answer, reached } = await race(() => api.post('/node/gone/power_on'), async () => {
      await must(api.del('/node/gone'));
      await must(api.put('/node/gone', { obm }));
    });
    expect(answer.status, answer.text).to.equal(404);
    expect(reached).to.deep.equal([]);
  });

  it('an admin who lost the admin flag meanwhile: 401', async () => {
    const boss = await makeUser(api, 'boss', 'boss-pw', [], true);
    const { answer } = await race(() => api.with(boss).post('/node/busy/power_on'), () => must(api.call('PATCH', '/auth/basic/user/boss', { body: { is_admin: false } })));
    expect(answer.status, answer.text).to.equal(401);
  });
});
