/**
 * A failed network operation as a project's members read it: that it failed, not the switch's
 * own words nor the switch and port it went through (show_node gives members no wiring). Admins
 * read the reason whole, in the status answers, the lists and the event stream alike.
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, must, makeNode, makeUser, mockSwitch, finished, ADMIN, Creds } from '../../helpers/server';
import { SseStream, SseEvent } from '../../helpers/sse';
import { MEMBERS_ERROR } from '../../../src/routes/operation-access';

describe('a failed network operation, read by members and by admins', function () {
  this.timeout(30_000);
  let ts: TestServer;
  let member: Creds;
  let statusId = '';
  const SWITCH = 'core-sw-7';
  const PORT = 'gi1/0/42';
  /** what no member's answer may hold: the switch, the port, the driver's words */
  const hidden = (text: string) => {
    expect(text).not.to.include(SWITCH);
    expect(text).not.to.include('gi1/0/42');
    expect(text).not.to.include('gi1%2F0%2F42');
    expect(text).not.to.match(/did not finish within/);
  };

  before(async () => {
    // Every switch call takes 300 ms and is given 100: each operation ends ERROR, with the driver's reason.
    ts = await startTestServer({ mockSwitchDelayMs: 300, switchTimeoutMs: 100 });
    const api = ts.api;
    await must(api.put('/project/ep'));
    member = await makeUser(api, 'ep-member', 'pw', ['ep']);
    await must(api.put('/network/ep-net', { owner: 'ep', access: 'ep', net_id: '' }));
    await must(api.put(`/switch/${SWITCH}`, mockSwitch));
    await must(api.put(`/switch/${SWITCH}/port/${PORT}`));
    await makeNode(api, 'en', ['eth0']);
    await must(api.post(`/switch/${SWITCH}/port/${PORT}/connect_nic`, { node: 'en', nic: 'eth0' }));
    await must(api.post('/project/ep/connect_node', { node: 'en' }));
    statusId = (await must(api.with(member).post('/node/en/nic/eth0/connect_network', { network: 'ep-net' }), 202)).body.status_id;
    expect((await finished(api, statusId)).status).to.equal('ERROR');
  });
  after(() => stopTestServer(ts));

  it('gives a member the status, the node\'s operations and the lists with the failure in words of its own; an admin the reason', async () => {
    const api = ts.api;
    const as = api.with(member);
    const status = await must(as.get(`/networking_action/${statusId}`));
    expect(status.body).to.include({ status: 'ERROR', error: MEMBERS_ERROR });
    hidden(JSON.stringify(status.body));
    expect((await must(api.get(`/networking_action/${statusId}`))).body.error).to.match(/did not finish within 100 ms/);

    const ofNode = await must(as.get('/node/en/networking_actions'));
    expect(ofNode.body.map((a: { error?: string }) => a.error)).to.deep.equal([MEMBERS_ERROR]);
    hidden(JSON.stringify(ofNode.body));
    expect((await must(api.get('/node/en/networking_actions'))).body[0].error).to.match(/did not finish within/);

    const all = await must(as.get('/networking_actions'));
    expect(all.body.map((a: { error?: string }) => a.error)).to.deep.equal([MEMBERS_ERROR]);
    hidden(JSON.stringify(all.body));

    const rows = await must(as.get('/nodes/all/details'));
    const row = rows.body.nodes.find((n: { name: string }) => n.name === 'en');
    expect(row.last_operation).to.include({ status: 'ERROR', error: MEMBERS_ERROR });
    hidden(JSON.stringify(rows.body));
    const adminRow = (await must(api.get('/nodes/all/details'))).body.nodes.find((n: { name: string }) => n.name === 'en');
    expect(adminRow.last_operation.error).to.match(/did not finish within/);
  });

  it('streams to a member the operation\'s events without the switch, the port or the reason, and to an admin whole (a replay and live)', async () => {
    const read = async (as: Creds) => {
      const s = new SseStream(`${ts.url}/events?after=0&kind=nic`, { as });
      try {
        expect(await s.answered()).to.equal(200);
        await s.until(() => s.events.filter((e) => e.event === 'networking_action.finished').length >= 2);
        return s.events.filter((e) => e.event.startsWith('networking_action.'));
      } finally {
        s.close();
      }
    };
    // A second operation while the streams are open: one replayed, one live.
    const live = (async () => {
      const id = (await must(ts.api.with(member).post('/node/en/nic/eth0/connect_network', { network: 'ep-net' }), 202)).body.status_id;
      return finished(ts.api, id);
    })();
    const [theirs, admins] = await Promise.all([read(member), read(ADMIN)]);
    await live;
    const accepted = (es: SseEvent[]) => es.filter((e) => e.event === 'networking_action.accepted');
    const failed = (es: SseEvent[]) => es.filter((e) => e.event === 'networking_action.finished');
    expect(accepted(theirs)).to.have.length(2);
    for (const e of accepted(theirs)) {
      expect(e.data.data.action).to.include({ type: 'modify_port', newNetwork: 'ep-net' });
      expect(e.data.data.action).not.to.have.any.keys('switch', 'port');
    }
    for (const e of failed(theirs)) {
      expect(e.data.data.error).to.equal(MEMBERS_ERROR);
      expect(e.data.data.operation).to.include({ status: 'ERROR', error: MEMBERS_ERROR });
    }
    hidden(JSON.stringify(theirs));
    expect(accepted(admins).map((e) => [e.data.data.action.switch, e.data.data.action.port])).to.deep.equal([[SWITCH, PORT], [SWITCH, PORT]]);
    for (const e of failed(admins)) {
      expect(e.data.data.error).to.match(/did not finish within/);
      expect(e.data.data.operation.error).to.match(/did not finish within/);
    }
    // The same events, the same ids: only their text differs.
    expect(theirs.map((e) => e.id)).to.deep.equal(admins.map((e) => e.id));
  });
});
