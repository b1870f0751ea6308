/** The lease guards pass through what the service reads of a driver, and refuse once the lease is gone. */
import { expect } from 'chai';
import { guardSwitch } from '../../src/lease-guard';
import type { PortVlans, SwitchDriver, SwitchSession } from '../../drivers/switch/types';

/** A session that counts its changes, as the SSH drivers do. */
function countingDriver(): SwitchDriver {
  return {
    async open(): Promise<SwitchSession> {
      let sent = 0;
      const vlans: PortVlans = { native: null, tagged: [] };
      return {
        hostKey: 'SHA256:k',
        get changesSent() { return sent; },
        setNative: async (_p, v) => { sent++; vlans.native = v; },
        removeNative: async () => { sent++; vlans.native = null; },
        addTagged: async (_p, v) => { sent++; vlans.tagged.push(v); },
        removeTagged: async () => { sent++; },
        resetPort: async () => { sent++; },
        getPortVlans: async () => vlans,
        close: async () => undefined,
      };
    },
  };
}

describe('guardSwitch', () => {
  it('passes the session\'s host key and its live count of changes sent (no count stays no count)', async () => {
    let may = true;
    const s = await guardSwitch(countingDriver(), () => may)!.open({ name: 's', type: 't', fields: {} }, new AbortController().signal);
    expect(s.hostKey).to.equal('SHA256:k');
    expect(s.changesSent).to.equal(0);
    await s.setNative('p', 5);
    await s.addTagged('p', 6);
    expect(s.changesSent).to.equal(2);
    may = false;
    await s.resetPort('p').then(() => expect.fail('a change without the lease'), (e: Error) => expect(e.message).to.match(/no longer holds the lease/));
    expect(s.changesSent, 'a refused change sends nothing').to.equal(2);
    expect(await s.getPortVlans('p'), 'reads pass').to.deep.equal({ native: 5, tagged: [6] });

    const plain: SwitchDriver = { open: async (...args) => { const x = await countingDriver().open(...args); return { ...x, changesSent: undefined }; } };
    const p = await guardSwitch(plain, () => true)!.open({ name: 's', type: 't', fields: {} }, new AbortController().signal);
    expect(p.changesSent).to.equal(undefined);
  });
});
