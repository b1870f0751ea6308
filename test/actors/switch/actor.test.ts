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
      expect((await refusal(world.switches.ask('s', { type: 'switch.delete', by }))).message).to.match(/still has ports/);
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
});
