/**
 * The Redfish BMC simulator (test/helpers/redfish-sim.ts) is faithful enough for a real
 * Redfish client: sushy, the library OpenStack Ironic drives BMCs with (Debian package
 * python3-sushy, listed in .ci/apt-packages), logs in with a session, finds the only system,
 * reads its power state, resets it, sets its boot override (with the ETag), reads the BMC's
 * error texts, and logs out. Never skipped: a missing sushy fails the suite.
 */
import { expect } from 'chai';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { RedfishSim, startRedfishSim, stopAllRedfishSims } from '../helpers/redfish-sim';

const USER = 'admin';
const PASSWORD = 'Sushy-Pw-93!';

function findScript(): string {
  // Compiled to dist/test/sim; the script is not copied by tsc, so walk up to the repository's copy.
  for (let d = __dirname; d !== dirname(d); d = dirname(d)) {
    const f = join(d, 'test', 'sim', 'redfish', 'sushy_check.py');
    if (existsSync(f)) return f;
  }
  throw new Error(`test/sim/redfish/sushy_check.py not found above ${__dirname}`);
}

/** Debian's python3 (where python3-sushy installs), else the python3 on PATH, if it has sushy. */
function findPython(): string {
  for (const py of ['/usr/bin/python3', 'python3']) {
    if (spawnSync(py, ['-c', 'import sushy'], { stdio: 'ignore', timeout: 20_000 }).status === 0) return py;
  }
  throw new Error('the sushy test needs Python 3 with sushy: apt-get install -y python3-sushy (listed in .ci/apt-packages)');
}

describe('the Redfish BMC simulator, driven by sushy (Ironic\'s Redfish library)', function () {
  this.timeout(60_000);
  let python: string;
  let sim: RedfishSim;

  /** Runs the sushy script against the simulator with a clean environment (no CA bundle or proxy settings of the machine). */
  async function sushy(password: string, ...extra: string[]): Promise<Record<string, unknown>> {
    const { stdout } = await promisify(execFile)(python, [findScript(), sim.url, USER, sim.certFile, ...extra], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', SUSHY_CHECK_PASSWORD: password },
      timeout: 50_000,
    });
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
  }

  before(() => { python = findPython(); });
  beforeEach(async () => { sim = await startRedfishSim({ user: USER, password: PASSWORD }); });
  afterEach(async () => { await sim.stop(); });
  after(() => stopAllRedfishSims());

  it('lets sushy log in, read the system and its power state, reset it, set its boot override and log out', async () => {
    const seen = await sushy(PASSWORD);
    expect(seen).to.deep.equal({
      redfish_version: '1.15.0',
      session: '/redfish/v1/SessionService/Sessions/1',
      system: '/redfish/v1/Systems/1',
      power_before: 'Off',
      allowed_resets: ['ForceOff', 'ForceOn', 'ForceRestart', 'GracefulRestart', 'GracefulShutdown', 'Nmi', 'On', 'PowerCycle', 'PushPowerButton'],
      power_after_on: 'On',
      boot_after_patch: ['Pxe', 'Once'],
      boot_after_restart: ['Pxe', 'Disabled'],
      power_after_restart: 'On',
      power_after_off: 'Off',
    });
    expect(sim.events).to.deep.equal([
      'login admin', 'booted Hdd', 'reset On', 'boot Pxe Once', 'booted Pxe', 'reset ForceRestart', 'reset ForceOff', 'logout 1',
    ]);
    expect(sim.system().boots).to.deep.equal(['Hdd', 'Pxe']);
    expect(sim.activeSessions()).to.equal(0);
    // every request after the login carried the session's token
    expect(sim.requests.filter((r) => r.auth === 'basic')).to.deep.equal([]);
  });

  it('gives sushy the BMC\'s error text for a wrong password', async () => {
    const seen = await sushy('not-the-password', 'refused');
    expect(seen).to.deep.equal({
      error: 'AccessError',
      status: 401,
      code: 'Base.1.13.NoValidSession',
      detail: 'There is no valid session established with the implementation.',
    });
    // sushy tried a session, then (as it does) fell back to basic authentication
    expect(sim.events).to.deep.equal(['login refused admin']);
    expect(sim.logins).to.equal(0);
  });
});
