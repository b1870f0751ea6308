/**
 * PowerControl picks the driver of the node's OBM type and maps driver failures to 502
 * OBMError. Serialization per BMC and the deadline of queued calls are the driver's
 * (test/drivers/obm/ipmitool.test.ts, against ipmi_sim; over HTTP in test/routes/power.test.ts).
 */
import { expect } from 'chai';
import { PowerControl } from '../../../actors/node/power';
import { ObmDriver, ObmError, ObmInfo, PowerState } from '../../../drivers/obm/types';
import { MockObmDriver } from '../../../drivers/obm/mock';
import { HiltError } from '../../../src/errors';

const IPMI = 'http://schema.massopencloud.org/haas/v0/obm/ipmi';
const MOCK = 'http://schema.massopencloud.org/haas/v0/obm/mock';
const obm = (host: string, type = IPMI, user = 'u') => ({ type, fields: { host, user, password: 'p' } });

/** Records which calls reach it. */
class RecordingDriver implements ObmDriver {
  readonly calls: string[] = [];
  powerCycle = async (i: ObmInfo, o?: { force?: boolean }) => { this.calls.push(`cycle ${i.host}${o?.force ? ' force' : ''}`); };
  powerOff = async (i: ObmInfo) => {
    this.calls.push(`off ${i.host}`);
    if (i.user === 'fail') throw new ObmError(`BMC ${i.host} refused`);
  };
  powerStatus = async (i: ObmInfo): Promise<PowerState> => { this.calls.push(`status ${i.host}`); return 'on'; };
}

describe('PowerControl', () => {
  it('sends each call to the driver of the node\'s OBM type', async () => {
    const ipmi = new RecordingDriver();
    const mock = new MockObmDriver();
    const pc = new PowerControl({ ipmi, mock });
    await pc.cycle(obm('a'), true);
    await pc.off(obm('a'));
    expect(await pc.status(obm('a'))).to.equal('on');
    await pc.cycle(obm('m', MOCK));
    expect(ipmi.calls).to.deep.equal(['cycle a force', 'off a', 'status a']);
    expect(mock.state('m')).to.include({ power: 'on', bootdev: 'pxe' });
  });

  it('turns a driver failure into a 502 OBMError and keeps serving the node afterwards', async () => {
    const pc = new PowerControl({ ipmi: new RecordingDriver() });
    const err = await pc.off(obm('a', IPMI, 'fail')).catch((e) => e);
    expect(err).to.be.instanceOf(HiltError);
    expect((err as HiltError).type).to.equal('OBMError');
    expect(await pc.status(obm('a'))).to.equal('on');
  });

  it('answers 502 for an OBM type without a configured driver', async () => {
    const err = await new PowerControl({}).off(obm('a')).catch((e) => e);
    expect((err as HiltError).type).to.equal('OBMError');
  });
});
