import { expect } from 'chai';
import { HiltError } from '../../../actors/errors';
import { testWorld, FAKE_SWITCH } from '../../helpers/world';

const by = 'admin';
const refusal = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a refusal'); }, (e: HiltError) => e);

describe('SwitchActor (switch → port)', () => {
  it('registers and deletes its ports through its mailbox, and is deleted only once it has none', async () => {
    const t = testWorld();
    const { world } = t;
    try {
      expect((await refusal(world.switches.ask('s', { type: 'switch.registerPort', by, port: 'a' }))).type).to.equal('NotFoundError');
      await world.switches.ask('s', { type: 'switch.register', by, switchType: FAKE_SWITCH, fields: { hostname: 'h' } });
      expect((await refusal(world.switches.ask('s', { type: 'switch.register', by, switchType: FAKE_SWITCH, fields: {} }))).type).to.equal('DuplicateError');
      await Promise.all(['a', 'b/1'].map((port) => world.switches.ask('s', { type: 'switch.registerPort', by, port })));
      expect([...world.rm.portsBySwitch.get('s')].sort()).to.deep.equal(['a', 'b/1']);
      expect((await refusal(world.switches.ask('s', { type: 'switch.delete', by }))).message).to.match(/^switch s still has 2 ports \(a, b\/1\)$/);
      await world.switches.ask('s', { type: 'switch.registerPort', by, port: 'c' });
      for (const port of ['a', 'b/1', 'c']) await world.switches.ask('s', { type: 'switch.deletePort', by, port });
      expect((await refusal(world.switches.ask('s', { type: 'switch.deletePort', by, port: 'a' }))).type).to.equal('NotFoundError');
      await world.switches.ask('s', { type: 'switch.delete', by });
      expect(world.rm.switches.has('s')).to.equal(false);
      expect(world.rm.portsBySwitch.has('s')).to.equal(false);
    } finally {
      await t.close();
    }
  });

  it('owns the SSH host key: pinned at registration or recorded once, another one refused, cleared by an admin', async () => {
    const t = testWorld();
    const { world } = t;
    try {
      await world.switches.ask('s', { type: 'switch.register', by, switchType: FAKE_SWITCH, fields: { hostname: 'h' } });
      expect(world.rm.switches.get('s')!.hostKey).to.equal(undefined);
      await world.switches.ask('s', { type: 'switch.recordHostKey', by: 'switch', fingerprint: 'SHA256:one' });
      await world.switches.ask('s', { type: 'switch.recordHostKey', by: 'switch', fingerprint: 'SHA256:one' });
      expect(world.rm.switches.get('s')!.hostKey).to.equal('SHA256:one');
      const refused = await refusal(world.switches.ask('s', { type: 'switch.recordHostKey', by: 'switch', fingerprint: 'SHA256:two' }));
      expect(refused.type).to.equal('IllegalStateError');
      expect(refused.message).to.match(/SHA256:two differs from the recorded SHA256:one/);
      await world.switches.ask('s', { type: 'switch.clearHostKey', by });
      expect(world.rm.switches.get('s')).to.not.have.property('hostKey');
      await world.switches.ask('s', { type: 'switch.recordHostKey', by: 'switch', fingerprint: 'SHA256:two' });
      expect(world.rm.switches.get('s')!.hostKey).to.equal('SHA256:two');
      await world.switches.ask('p', { type: 'switch.register', by, switchType: FAKE_SWITCH, fields: {}, hostKey: 'SHA256:pinned' });
      expect(world.rm.switches.get('p')!.hostKey).to.equal('SHA256:pinned');
      // the journal says who did what
      const types: string[] = [];
      for await (const e of world.switches.journal('s', 10)) types.push((e.data as { type: string }).type);
      expect(types).to.include.members(['SwitchHostKeyRecorded', 'SwitchHostKeyCleared']);
    } finally {
      await t.close();
    }
  });
});
