import { expect } from 'chai';
import { PowerControl } from '../../../actors/node/power';
import { ObmDriver, ObmError, ObmInfo, PowerState } from '../../../drivers/obm/types';
import { HiltError } from '../../../src/errors';

const IPMI = 'http://schema.massopencloud.org/haas/v0/obm/ipmi';
const obm = (host: string) => ({ type: IPMI, host, user: 'u', password: 'p' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Records when each call starts and ends, per BMC host. */
class RecordingDriver implements ObmDriver {
  readonly events: string[] = [];
  active = new Map<string, number>();
  maxActive = new Map<string, number>();
  private async op(name: string, info: ObmInfo): Promise<void> {
    const n = (this.active.get(info.host) ?? 0) + 1;
    this.active.set(info.host, n);
    this.maxActive.set(info.host, Math.max(n, this.maxActive.get(info.host) ?? 0));
    this.events.push(`${info.host} start ${name}`);
    await sleep(30);
    this.events.push(`${info.host} end ${name}`);
    this.active.set(info.host, n - 1);
    if (info.user === 'fail') throw new ObmError(`BMC ${info.host} refused`);
  }
  powerCycle = (i: ObmInfo) => this.op('cycle', i);
  powerOff = (i: ObmInfo) => this.op('off', i);
  powerStatus = async (i: ObmInfo): Promise<PowerState> => { await this.op('status', i); return 'on'; };
}

describe('PowerControl', () => {
  it('never overlaps two calls for one node, in the order they were made', async () => {
    const d = new RecordingDriver();
    const pc = new PowerControl({ ipmi: d });
    await Promise.all([pc.cycle('n1', obm('a')), pc.off('n1', obm('a')), pc.status('n1', obm('a')), pc.cycle('n1', obm('a'))]);
    expect(d.maxActive.get('a')).to.equal(1);
    expect(d.events).to.deep.equal([
      'a start cycle', 'a end cycle', 'a start off', 'a end off', 'a start status', 'a end status', 'a start cycle', 'a end cycle',
    ]);
  });

  it('runs different nodes in parallel', async () => {
    const d = new RecordingDriver();
    const pc = new PowerControl({ ipmi: d });
    const t = Date.now();
    await Promise.all(['a', 'b', 'c', 'd'].map((h, i) => pc.cycle(`n${i}`, obm(h))));
    expect(Date.now() - t).to.be.below(100);
  });

  it('turns a driver failure into a 502 OBMError and keeps serving the node afterwards', async () => {
    const d = new RecordingDriver();
    const pc = new PowerControl({ ipmi: d });
    const err = await pc.off('n1', { ...obm('a'), user: 'fail' }).catch((e) => e);
    expect(err).to.be.instanceOf(HiltError);
    expect((err as HiltError).status).to.equal(502);
    expect((err as HiltError).type).to.equal('OBMError');
    expect(await pc.status('n1', obm('a'))).to.equal('on');
  });

  it('answers every call within the timeout, also those queued behind a hung BMC, which never reach it', async () => {
    const d = new RecordingDriver();
    let calls = 0;
    d.powerOff = async () => { calls++; await new Promise(() => undefined); }; // a BMC that never answers
    const pc = new PowerControl({ ipmi: d }, 200);
    const t = Date.now();
    const answers = await Promise.all([1, 2, 3].map(() => pc.off('n1', obm('a')).then(() => 'ok', (e: HiltError) => `${e.status} ${e.message}`)));
    expect(Date.now() - t).to.be.below(400);
    expect(answers[0]).to.match(/^502 .*did not answer within 200 ms/);
    expect(answers[1]).to.match(/^502 .*still busy/);
    expect(answers[2]).to.match(/^502 .*still busy/);
    expect(calls).to.equal(1);
  });

  it('answers 502 for an OBM type without a configured driver', async () => {
    const pc = new PowerControl({});
    const err = await pc.off('n1', obm('a')).catch((e) => e);
    expect((err as HiltError).status).to.equal(502);
  });
});
