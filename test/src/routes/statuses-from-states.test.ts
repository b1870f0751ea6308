/**
 * GET /node/<node>/networking_actions from the nics' states (actors/nic/history.ts): once a
 * reading of the journals found nothing the states do not hold, later listings come from the
 * states; they answer exactly what reading the journals answers, through random operations,
 * nics deleted with statuses and registered again under the same name, a nic past the number of
 * statuses a state keeps, and the node deleted and registered again (seeded).
 */
import { expect } from 'chai';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, mockSwitch, finished } from '../../helpers/server';

/** A small seeded generator (mulberry32): the same steps on every run. */
function random(seed: number): (n: number) => number {
  let a = seed;
  return (n) => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

describe('a node\'s statuses from its nics\' states', function () {
  this.timeout(120_000);
  let ts: TestServer;
  let api: Client;
  let port = 0;

  before(async () => {
    ts = await startTestServer();
    api = ts.api;
    await must(api.put('/switch/s1', mockSwitch));
    await must(api.put('/project/p'));
    for (const n of ['net-a', 'net-b']) await must(api.put(`/network/${n}`, { owner: 'p', access: 'p', net_id: '' }));
  });
  after(() => stopTestServer(ts));

  async function wire(node: string, nic: string): Promise<void> {
    const p = `gi1/0/${++port}`;
    await must(api.put(`/switch/s1/port/${p}`));
    await must(api.post(`/switch/s1/port/${p}/connect_nic`, { node, nic }));
  }

  /** What the listing answers, and what it answers when it must read the journals. */
  async function listings(node: string): Promise<{ answer: unknown; journals: unknown; fromStates: boolean }> {
    const fromStates = ts.world.rm.completeStatuses.has(node);
    const answer = (await must(api.get(`/node/${node}/networking_actions`))).body;
    ts.world.rm.completeStatuses.delete(node);
    const journals = (await must(api.get(`/node/${node}/networking_actions`))).body;
    return { answer, journals, fromStates };
  }

  it('answers as the journals do, through random operations, deletions and registrations again', async () => {
    const rnd = random(27);
    const node = 'sn';
    const nics = ['eth0', 'eth1'];
    const setUp = async () => {
      await makeNode(api, node, nics);
      for (const nic of nics) await wire(node, nic);
      await must(api.post('/project/p/connect_node', { node }));
    };
    /** Every network detached from the node's nics, and the node out of its project. */
    const release = async () => {
      for (const n of nics) {
        for (const network of Object.values(ts.world.rm.nic(node, n)!.networks)) {
          await finished(api, (await must(api.post(`/node/${node}/nic/${n}/detach_network`, { network }), 202)).body.status_id);
        }
      }
      await must(api.post('/project/p/detach_node', { node }));
    };
    await setUp();
    let fromStates = 0;
    let steps = 0;
    for (; steps < 60; steps++) {
      const nic = nics[rnd(nics.length)];
      const roll = rnd(20);
      if (roll < 14) {
        // Connect or detach one of the networks (refusals are fine: they change nothing).
        const network = ['net-a', 'net-b'][rnd(2)];
        const verb = rnd(2) ? 'connect_network' : 'detach_network';
        const r = await api.post(`/node/${node}/nic/${nic}/${verb}`, { network });
        if (r.status === 202) await finished(api, r.body.status_id);
      } else if (roll < 17) {
        // The nic deleted (the node out of its project and the nic off its port first) and
        // registered again under its name.
        await release();
        const wired = ts.world.rm.wiring.get(node, nic);
        if (wired) await must(api.post(`/switch/${wired.switch}/port/${wired.port}/detach_nic`));
        await must(api.del(`/node/${node}/nic/${nic}`));
        await must(api.put(`/node/${node}/nic/${nic}`, { macaddr: `02:00:00:00:0b:0${steps % 10}` }));
        await wire(node, nic);
        await must(api.post('/project/p/connect_node', { node }));
      } else if (roll < 18) {
        // The node deleted and registered again: a new registration, with no statuses.
        await release();
        for (const n of nics) {
          const wired = ts.world.rm.wiring.get(node, n);
          if (wired) await must(api.post(`/switch/${wired.switch}/port/${wired.port}/detach_nic`));
          await must(api.del(`/node/${node}/nic/${n}`));
        }
        await must(api.del(`/node/${node}`));
        await setUp();
      }
      const l = await listings(node);
      expect(l.answer, `step ${steps}`).to.deep.equal(l.journals);
      if (l.fromStates) fromStates++;
      // Listed twice: the second time from the states when the journals hold nothing more.
      const again = await listings(node);
      expect(again.answer, `step ${steps}, again`).to.deep.equal(again.journals);
      if (again.fromStates) fromStates++;
    }
    // Most listings came from the states (the rest: right after a deletion or a trimmed nic).
    expect(fromStates).to.be.greaterThan(steps / 2);
  });

  it('reads the journals again for a nic past the statuses its state keeps, and answers the same', async () => {
    const node = 'sm';
    await makeNode(api, node, ['eth0']);
    await wire(node, 'eth0');
    await must(api.post('/project/p/connect_node', { node }));
    const operate = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const verb = i % 2 ? 'detach_network' : 'connect_network';
        await finished(api, (await must(api.post(`/node/${node}/nic/eth0/${verb}`, { network: 'net-a' }), 202)).body.status_id);
      }
    };
    // Noted while the state holds every status…
    await operate(0, 4);
    await must(api.get(`/node/${node}/networking_actions`));
    expect(ts.world.rm.completeStatuses.has(node)).to.equal(true);
    // …then past what a state keeps: 40 statuses, of which the state holds 32.
    await operate(4, 40);
    const first = await listings(node);
    expect(first.fromStates).to.equal(true);
    expect((first.answer as unknown[]).length).to.equal(40);
    expect(first.answer).to.deep.equal(first.journals);
    const second = await listings(node);
    expect(second.fromStates, 'the journals hold more than the state: not noted again').to.equal(false);
    expect(second.answer).to.deep.equal(second.journals);
  });
});
