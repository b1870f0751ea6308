/** The one wrapper of a switch session: reads pass, changes are counted, timed and refused once the lease is gone. */
import { expect } from 'chai';
import { wrapSession } from '../../hardware/switch-session';
import type { PortVlans, SwitchSession } from '../../drivers/switch/types';

/** A session that counts its changes, as the SSH drivers do (`count: false`: one that does not). */
function session(count = true): SwitchSession {
  let sent = 0;
  const vlans: PortVlans = { native: null, tagged: [] };
  const s: SwitchSession = {
    hostKey: 'SHA256:k',
    setNative: async (_p, v) => { sent++; vlans.native = v; },
    removeNative: async () => { sent++; vlans.native = null; },
    addTagged: async (_p, v) => { sent++; vlans.tagged.push(v); },
    removeTagged: async () => { sent++; },
    resetPort: async () => { sent++; },
    getPortVlans: async () => vlans,
    close: async () => undefined,
  };
  if (count) Object.defineProperty(s, 'changesSent', { get: () => sent });
  return s;
}

describe('wrapSession', () => {
  it('passes the host key and the driver\'s live count of changes sent, and refuses changes once the lease is gone', async () => {
    let may = true;
    const calls: string[] = [];
    const s = wrapSession(session(), { report: (c, _s, ok) => calls.push(`${c} ${ok}`), mayAct: () => may });
    expect(s.hostKey).to.equal('SHA256:k');
    expect(s.changesSent).to.equal(0);
    await s.setNative('p', 5);
    await s.addTagged('p', 6);
    expect(s.changesSent).to.equal(2);
    may = false;
    await s.resetPort('p').then(() => expect.fail('a change without the lease'), (e: Error) => expect(e.message).to.match(/no longer holds the lease/));
    expect(s.changesSent, 'a refused change sends nothing').to.equal(2);
    expect(await s.getPortVlans('p'), 'reads pass').to.deep.equal({ native: 5, tagged: [6] });
    expect(calls).to.deep.equal(['set_native true', 'add_tagged true', 'get_port_vlans true']);
  });

  it('counts each change call from its start for a driver that keeps no count', async () => {
    const s = wrapSession(session(false), { report: () => undefined });
    expect(s.changesSent).to.equal(0);
    await s.removeTagged('p', 6);
    await s.getPortVlans('p');
    expect(s.changesSent).to.equal(1);
  });
});
