/**
 * A service killed outright (SIGKILL: no close path runs) leaves no console session's ipmitool
 * behind: ipmitool ends its SOL session when its stdin, a pipe from the service, reaches its end
 * (drivers/obm/ipmi-sol.ts). Real ipmi_sim with SOL, the service as a child process.
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServerProcess } from '../../helpers/process';
import { Client, must, IPMI_OBM } from '../../helpers/server';
import { startIpmiSim, stopAllIpmiSims, requireIpmiTools } from '../../helpers/ipmisim';
import { startSerialLine, SerialLine, solChildren } from '../../helpers/serial-line';
import { until } from '../../helpers/wait';

/** Has the process exited (gone, or a zombie nobody reaps)? */
function exited(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

describe('a console session when the service is killed', function () {
  this.timeout(60_000);
  let dir: string;
  let line: SerialLine;
  before(() => {
    requireIpmiTools();
    dir = mkdtempSync(join(tmpdir(), 'hilt-console-crash-'));
  });
  after(async () => {
    await stopAllIpmiSims();
    await line?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves no ipmitool running after SIGKILL of the service', async () => {
    line = await startSerialLine();
    const sim = await startIpmiSim({ user: 'admin', password: 'crash-sol-pw', solPort: line.port });
    const admin = { user: 'admin', password: 'crash-admin-pw' };
    const srv = await startServerProcess({ HILT_DATA_DIR: dir, HILT_STORAGE: 'lmdb', HILT_ADMIN_PASSWORD: admin.password, HILT_IPMI_CIPHER_SUITE: '3' });
    const api = new Client(srv.url, admin);
    await must(api.put('/node/k1', { obm: { type: IPMI_OBM, host: sim.host, user: 'admin', password: 'crash-sol-pw' } }));
    await must(api.call('PUT', '/node/k1/console'));
    await until('the service\'s sol activate child', () => solChildren(srv.child.pid!).length === 1, 15_000);
    const [kid] = solChildren(srv.child.pid!);
    await until('the session is up', async () => /^hilt_console_sessions 1$/m.test((await api.get('/metrics')).text), 15_000);
    await line.write('still here\r\n');
    await until('logged', async () => (await api.get('/node/k1/console')).text.includes('still here'), 10_000);
    srv.child.kill('SIGKILL');
    await srv.exited;
    await until('the orphaned ipmitool exits', () => exited(kid!.pid), 10_000);
    expect(exited(kid!.pid)).to.equal(true);
  });
});
