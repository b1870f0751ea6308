/**
 * Waiting for and killing a QEMU process, with a stand-in process (node, named after a fake QMP
 * socket, answering no QMP): it is a direct child, killed by PID in the after-hook.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { expect } from 'chai';

import { alive as isQemuOf, killQemu, processStart, waitDead } from '../../../../drivers/headnode/qemu/process';
import type { VmState } from '../../../../drivers/headnode/qemu/state';
import { alive } from '../../../helpers/vm';

const live = new AbortController().signal;

describe('QEMU processes', () => {
  const children: ChildProcess[] = [];
  after(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });

  /** A live process whose command line names `qmp`, recorded as a VM's state would record it. */
  async function standIn(): Promise<VmState> {
    const qmp = `/nonexistent/hilt-test-${process.pid}-${children.length}.qmp`;
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', qmp], { stdio: 'ignore' });
    children.push(child);
    const pid = child.pid!;
    const st: VmState = { version: 1, name: 'hn', pid, procStart: await processStart(pid), qmp, vncport: null, bridge: 'br', overlay: '', hnics: [], startedAt: '' };
    // Until node has exec'd, the child's command line is still the parent's.
    while (!(await isQemuOf(st))) await new Promise((r) => setTimeout(r, 5));
    return st;
  }

  it('waitDead ends when the signal aborts, with its reason, while the process lives on', async () => {
    const st = await standIn();
    const controller = new AbortController();
    const reason = new Error('deadline');
    setTimeout(() => controller.abort(reason), 100);
    const t0 = Date.now();
    expect(await waitDead(st, controller.signal).catch((e) => e)).to.equal(reason);
    expect(Date.now() - t0).to.be.below(1000);
    expect(alive(st.pid)).to.equal(true);
    expect(await waitDead(st, live, 50)).to.equal(false); // withinMs: gave up, no error
  });

  it('killQemu SIGKILLs a process whose QMP does not answer, and resolves once it is gone', async () => {
    const st = await standIn();
    await killQemu(st, AbortSignal.timeout(10_000));
    expect(alive(st.pid)).to.equal(false);
    expect(await waitDead(st, live)).to.equal(true);
  });
});
