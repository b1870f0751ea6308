/**
 * QemuHeadnodeDriver against real QEMU (TCG, 64 MiB, empty disk: SeaBIOS + iPXE) and a private
 * Open vSwitch (netdev datapath). These tests FAIL, never skip, when QEMU or OVS is missing.
 */
import { execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';

import { QemuHeadnodeDriver } from '../../../../drivers/headnode/qemu';
import { HeadnodeError, type HnicSpec } from '../../../../drivers/headnode/types';
import { makeBaseImage } from '../../../helpers/images';
import { startPrivateOvs, type PrivateOvs } from '../../../helpers/ovs';
import { alive, qemuProcesses, qmp, vncBanner, waitGone } from '../../../helpers/vm';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** The deadline of one driver call: a hang fails with the call's own error, not mocha's timeout. */
const within = () => AbortSignal.timeout(30_000);

function sh(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: 15_000, killSignal: 'SIGKILL', encoding: 'utf8' }, (err, stdout, stderr) =>
      err ? reject(new Error(`${cmd} ${args.join(' ')}: ${(stderr || '').trim() || err.message}`)) : resolve(stdout.trim()),
    );
  });
}

describe('QemuHeadnodeDriver (real QEMU + Open vSwitch)', function () {
  this.timeout(60_000);

  let tmp: string;
  let imagesDir: string;
  let stateDir: string;
  let ovs: PrivateOvs;
  let driver: QemuHeadnodeDriver;
  const drivers: QemuHeadnodeDriver[] = [];
  const veths: string[] = [];

  const make = (opts: Partial<ConstructorParameters<typeof QemuHeadnodeDriver>[0]> = {}) => {
    const d = new QemuHeadnodeDriver({ imagesDir, stateDir, bridge: ovs.bridge, ovsDbSock: ovs.dbSock, ...opts });
    drivers.push(d);
    return d;
  };
  const ports = async () => (await ovs.vsctl(['list-ports', ovs.bridge])).split('\n').filter(Boolean);
  const tag = (port: string) => ovs.vsctl(['get', 'port', port, 'tag']);

  before(async function () {
    try {
      await sh('qemu-system-x86_64', ['--version']);
    } catch (e) {
      throw new Error(`QEMU is required for these tests (apt-get install qemu-system-x86 qemu-utils): ${(e as Error).message}`);
    }
    tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'hilt-hn-'));
    imagesDir = path.join(tmp, 'images');
    stateDir = path.join(tmp, 'state');
    await makeBaseImage(imagesDir);
    await makeBaseImage(imagesDir, 'other-image');
    await fsp.writeFile(path.join(imagesDir, 'README.txt'), 'not an image');
    ovs = await startPrivateOvs();
    driver = make();
    process.on('exit', killLeftovers); // QEMU runs in its own process group: ^C would not reach it
  });

  const killLeftovers = () => {
    if (tmp) for (const pid of qemuProcesses(tmp)) process.kill(pid, 'SIGKILL');
  };

  after(async function () {
    for (const d of drivers) await d.close(within()).catch(() => undefined);
    killLeftovers(); // safety net; the last test asserts close() left nothing
    process.off('exit', killLeftovers);
    for (const v of veths) await sh('ip', ['link', 'del', v]).catch(() => undefined);
    if (ovs) await ovs.stop();
    if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
  });

  it('lists the base images in the images folder', async () => {
    expect(await driver.listImages(within())).to.deep.equal(['base-headnode', 'other-image']);
  });

  it('create makes a qcow2 overlay backed by the base image, idempotently', async () => {
    await driver.create('hn1', 'base-headnode', within());
    const overlay = driver.overlayPath('hn1');
    const info = JSON.parse(await sh('qemu-img', ['info', '--output=json', overlay]));
    expect(info.format).to.equal('qcow2');
    expect(info['backing-filename']).to.equal(path.join(imagesDir, 'base-headnode.qcow2'));
    const ino = fs.statSync(overlay).ino;
    await driver.create('hn1', 'base-headnode', within());
    expect(fs.statSync(overlay).ino).to.equal(ino);
    const err = await driver.create('hn1', 'other-image', within()).catch((e) => e);
    expect(err).to.be.instanceOf(HeadnodeError).with.property('message').that.matches(/already has a disk/);
  });

  it('create rejects unknown and malformed base image names', async () => {
    for (const bad of ['no-such-image', '../images/base-headnode', '']) {
      const err = await driver.create('hnX', bad, within()).catch((e) => e);
      expect(err, bad).to.be.instanceOf(HeadnodeError);
    }
    expect(fs.existsSync(driver.overlayPath('hnX'))).to.equal(false);
  });

  it('start before create fails with a HeadnodeError', async () => {
    const err = await driver.start('never-created', [], within()).catch((e) => e);
    expect(err).to.be.instanceOf(HeadnodeError).with.property('message').that.matches(/create it first/);
  });

  it('start boots QEMU: VNC answers, QMP says running, hnics are tagged OVS ports', async () => {
    const hnics: HnicSpec[] = [
      { name: 'eth0', vlan: 100 },
      { name: 'eth1', vlan: 200 },
      { name: 'unattached', vlan: null },
    ];
    const st = await driver.start('hn1', hnics, within());
    expect(st.running).to.equal(true);
    expect(st.vncport).to.be.a('number').within(5900, 5999);
    expect(await vncBanner(st.vncport!)).to.match(/^RFB 003\.00\d/);
    const status = await qmp(driver.qmpSocketPath('hn1'), 'query-status');
    expect(status).to.include({ running: true, status: 'running' });
    expect(await driver.status('hn1', within())).to.deep.equal(st);
    // QEMU runs under its seccomp sandbox (mode 2: a filter), with every optional deny set.
    const [pid, ...more] = qemuProcesses(driver.qmpSocketPath('hn1'));
    expect(more).to.deep.equal([]);
    const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    expect(argv[argv.indexOf('-sandbox') + 1]).to.equal('on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny');
    expect(fs.readFileSync(`/proc/${pid}/status`, 'utf8')).to.match(/^Seccomp:\s+2$/m);

    const [t0, t1, t2] = hnics.map((h) => driver.tapName('hn1', h.name));
    for (const t of [t0!, t1!, t2!]) {
      expect(t.length).to.be.at.most(15);
      expect(fs.existsSync(`/sys/class/net/${t}`), `tap ${t} exists`).to.equal(true);
    }
    expect(new Set([t0, t1, t2]).size).to.equal(3);
    expect(await ports()).to.include.members([t0, t1]);
    expect(await tag(t0!)).to.equal('100');
    expect(await tag(t1!)).to.equal('200');
    expect(await ovs.vsctl(['get', 'port', t0!, 'vlan_mode'])).to.equal('access');
    // The host keeps quiet on attached taps (no IPv6 chatter switched into the project's VLAN).
    expect(fs.readFileSync(`/proc/sys/net/ipv6/conf/${t0}/disable_ipv6`, 'utf8').trim()).to.equal('1');
    // No network: the NIC exists but its tap is not on the bridge (an untagged port would be a trunk).
    expect(await ports()).not.to.include(t2);
  });

  it('frames from the guest reach its VLAN and only its VLAN', async function () {
    // The empty disk makes SeaBIOS fall back to iPXE, which broadcasts DHCP on the first NIC (eth0,
    // VLAN 100). Listeners: a veth on VLAN 100 and one on VLAN 101, IPv6 off so the host stays silent
    // on them; kernel counters of the far ends count what OVS delivered.
    const id = randomBytes(3).toString('hex');
    const same = `hv${id}a`;
    const other = `hv${id}b`;
    const rx = (dev: string) => Number(fs.readFileSync(`/sys/class/net/${dev}/statistics/rx_packets`, 'utf8'));
    try {
      for (const v of [same, other]) {
        await sh('ip', ['link', 'add', v, 'type', 'veth', 'peer', 'name', `${v}p`]);
        veths.push(v);
        for (const end of [v, `${v}p`]) {
          fs.writeFileSync(`/proc/sys/net/ipv6/conf/${end}/disable_ipv6`, '1');
          await sh('ip', ['link', 'set', end, 'up']);
        }
      }
      await ovs.vsctl(['add-port', ovs.bridge, same, 'tag=100', '--', 'add-port', ovs.bridge, other, 'tag=101']);
      const deadline = Date.now() + 30_000;
      while (rx(`${same}p`) === 0) {
        if (Date.now() > deadline) throw new Error('no frame from the guest reached VLAN 100 within 30 s');
        await sleep(100);
      }
      // The guest did send (the kernel's rx on a tap counts frames written by QEMU) ...
      expect(rx(driver.tapName('hn1', 'eth0'))).to.be.greaterThan(0);
      // ... and nothing leaked to another VLAN.
      expect(rx(`${other}p`)).to.equal(0);
    } finally {
      await ovs.vsctl(['--if-exists', 'del-port', same, '--', '--if-exists', 'del-port', other]);
    }
  });

  it('start of a running headnode is idempotent (same process, same port)', async () => {
    const pid = await driver.processId('hn1');
    const before = await driver.status('hn1', within());
    const st = await driver.start('hn1', [
      { name: 'eth0', vlan: 100 },
      { name: 'eth1', vlan: 200 },
      { name: 'unattached', vlan: null },
    ], within());
    expect(st).to.deep.equal(before);
    expect(await driver.processId('hn1')).to.equal(pid);
  });

  it('stop powers the VM off and removes its taps from the bridge', async () => {
    const pid = (await driver.processId('hn1'))!;
    expect(alive(pid)).to.equal(true);
    const taps = ['eth0', 'eth1', 'unattached'].map((h) => driver.tapName('hn1', h));
    await driver.stop('hn1', within());
    expect(alive(pid)).to.equal(false);
    expect(await driver.status('hn1', within())).to.deep.equal({ running: false, vncport: null });
    expect(await driver.processId('hn1')).to.equal(null);
    expect(await ports()).not.to.include.any.members(taps);
    for (const t of taps) expect(fs.existsSync(`/sys/class/net/${t}`), `tap ${t} gone`).to.equal(false);
    await driver.stop('hn1', within()); // idempotent
    expect(fs.existsSync(driver.overlayPath('hn1')), 'stop keeps the disk').to.equal(true);
  });

  it('two headnodes at once get distinct VNC ports', async () => {
    await driver.create('hnA', 'base-headnode', within());
    await driver.create('hnB', 'other-image', within());
    const [a, b] = await Promise.all([
      driver.start('hnA', [{ name: 'eth0', vlan: 300 }], within()),
      driver.start('hnB', [{ name: 'eth0', vlan: 301 }], within()),
    ]);
    expect(a.vncport).to.be.a('number');
    expect(b.vncport).to.be.a('number');
    expect(a.vncport).not.to.equal(b.vncport);
    expect(await vncBanner(a.vncport!)).to.match(/^RFB/);
    expect(await vncBanner(b.vncport!)).to.match(/^RFB/);
    expect(await tag(driver.tapName('hnA', 'eth0'))).to.equal('300');
    expect(await tag(driver.tapName('hnB', 'eth0'))).to.equal('301');
    await Promise.all([driver.stop('hnA', within()), driver.stop('hnB', within())]);
    expect(await ports()).to.deep.equal([]);
  });

  it('status of a VM killed behind the driver\'s back says not running', async () => {
    const st = await driver.start('hnA', [{ name: 'eth0', vlan: 300 }], within());
    expect(st.running).to.equal(true);
    const pid = (await driver.processId('hnA'))!;
    process.kill(pid, 'SIGKILL');
    await waitGone(pid);
    expect(await driver.status('hnA', within())).to.deep.equal({ running: false, vncport: null });
    await driver.stop('hnA', within()); // cleans up the dead VM's OVS port
    expect(await ports()).not.to.include(driver.tapName('hnA', 'eth0'));
  });

  it('recover() from a new driver instance adopts a still-running VM (same pid, same VNC port)', async () => {
    const hnics = [{ name: 'eth0', vlan: 400 }, { name: 'eth1', vlan: null }];
    const st = await driver.start('hnA', hnics, within());
    const pid = await driver.processId('hnA');
    const restarted = make(); // as after a service restart: same stateDir, no memory
    expect(await restarted.status('hnA', within())).to.deep.equal(st);
    const rec = await restarted.recover('hnA', hnics, within());
    expect(rec).to.deep.equal(st);
    expect(await restarted.processId('hnA')).to.equal(pid);
    expect(await vncBanner(rec.vncport!)).to.match(/^RFB/);
    expect(await tag(driver.tapName('hnA', 'eth0'))).to.equal('400');
    // VLANs changed while the service was down: recover re-applies them without a reboot.
    const moved = await restarted.recover('hnA', [{ name: 'eth0', vlan: 401 }, { name: 'eth1', vlan: 402 }], within());
    expect(moved).to.deep.equal(st);
    expect(await restarted.processId('hnA')).to.equal(pid);
    expect(await tag(driver.tapName('hnA', 'eth0'))).to.equal('401');
    expect(await tag(driver.tapName('hnA', 'eth1'))).to.equal('402');
  });

  it('recover() restarts a VM whose process was killed', async () => {
    const restarted = make();
    const hnics = [{ name: 'eth0', vlan: 401 }, { name: 'eth1', vlan: 402 }];
    const pid = (await restarted.processId('hnA'))!;
    process.kill(pid, 'SIGKILL');
    await waitGone(pid);
    expect(await restarted.status('hnA', within())).to.deep.equal({ running: false, vncport: null });
    const rec = await restarted.recover('hnA', hnics, within());
    expect(rec.running).to.equal(true);
    const newPid = await restarted.processId('hnA');
    expect(newPid).to.be.a('number').and.not.equal(pid);
    expect(alive(newPid!)).to.equal(true);
    expect(await restarted.status('hnA', within())).to.deep.equal(rec);
    expect(await vncBanner(rec.vncport!)).to.match(/^RFB/);
    expect(await qmp(restarted.qmpSocketPath('hnA'), 'query-status')).to.include({ running: true });
    expect(await tag(restarted.tapName('hnA', 'eth0'))).to.equal('401');
    expect(await tag(restarted.tapName('hnA', 'eth1'))).to.equal('402');
  });

  it('destroy stops the VM and removes its overlay and state files', async () => {
    const pid = (await driver.processId('hnA'))!;
    expect(alive(pid)).to.equal(true);
    await driver.destroy('hnA', within());
    expect(alive(pid)).to.equal(false);
    expect(fs.existsSync(driver.overlayPath('hnA'))).to.equal(false);
    expect(fs.existsSync(driver.qmpSocketPath('hnA'))).to.equal(false);
    const left = fs.readdirSync(stateDir).filter((f) => f.startsWith('hnA-'));
    expect(left).to.deep.equal([]);
    expect(await ports()).to.deep.equal([]);
    await driver.destroy('hnA', within()); // idempotent
    expect(await driver.status('hnA', within())).to.deep.equal({ running: false, vncport: null });
  });

  it('a start that fails (no such bridge) leaves no QEMU, state or port behind', async () => {
    const broken = make({ bridge: 'nosuchbr0' });
    const err = await broken.start('hnB', [{ name: 'eth0', vlan: 5 }], within()).catch((e) => e);
    expect(err).to.be.instanceOf(HeadnodeError).with.property('message').that.matches(/nosuchbr0/);
    expect(qemuProcesses(stateDir)).to.deep.equal([]);
    expect(await broken.status('hnB', within())).to.deep.equal({ running: false, vncport: null });
    // The disk stays, with its log and the name file recorded with it.
    expect(fs.readdirSync(stateDir).filter((f) => f.startsWith('hnB-') && !/\.(qcow2|log|name)$/.test(f))).to.deep.equal([]);
  });

  it('a missing QEMU binary is a clear HeadnodeError', async () => {
    const noQemu = make({ qemuPath: '/nonexistent/qemu-system-x86_64' });
    const err = await noQemu.start('hnB', [], within()).catch((e) => e);
    expect(err).to.be.instanceOf(HeadnodeError).with.property('message').that.matches(/not found/);
    expect(await noQemu.status('hnB', within())).to.deep.equal({ running: false, vncport: null });
  });

  it('a start whose signal aborts rejects with its reason at once, kills its QEMU and its helper; a stop removes the rest', async () => {
    // An `ip` that hangs where the driver brings the taps up: QEMU runs (paused) by then. It
    // records its pid, and exec keeps that pid for the sleep.
    const reached = path.join(tmp, 'ip-reached');
    const ip = path.join(tmp, 'hanging-ip');
    fs.writeFileSync(ip, `#!/bin/sh\necho $$ > ${reached}\nexec sleep 60\n`, { mode: 0o755 });
    const hanging = make({ ipPath: ip });
    await hanging.create('hnT', 'base-headnode', within());
    const controller = new AbortController();
    const started = hanging.start('hnT', [{ name: 'eth0', vlan: 9 }], controller.signal).catch((e) => e);
    const deadline = Date.now() + 15_000;
    while (!fs.existsSync(reached) || !fs.readFileSync(reached, 'utf8').trim()) {
      if (Date.now() > deadline) throw new Error('the start never reached the taps');
      await sleep(20);
    }
    const helper = Number(fs.readFileSync(reached, 'utf8'));
    const qemu = (await hanging.processId('hnT'))!;
    expect(alive(qemu)).to.equal(true);
    const reason = new Error('deadline');
    const t0 = Date.now();
    controller.abort(reason);
    expect(await started).to.equal(reason);
    expect(Date.now() - t0, 'at the abort, not when the hanging start ends (never)').to.be.below(2000);
    await waitGone(helper, 2000);
    await waitGone(qemu, 2000);
    // Its state file is left for the next call on the headnode, which cleans up.
    const stateFiles = () => fs.readdirSync(stateDir).filter((f) => f.startsWith('hnT-') && f.endsWith('.json'));
    expect(stateFiles()).to.have.length(1);
    await hanging.stop('hnT', within());
    expect(stateFiles()).to.deep.equal([]);
    expect(await ports()).not.to.include(hanging.tapName('hnT', 'eth0'));
    await hanging.destroy('hnT', within());
  });

  it('rejects invalid hnic specs without starting anything', async () => {
    for (const hnics of [[{ name: 'e', vlan: 0 }], [{ name: 'e', vlan: 4095 }], [{ name: 'e', vlan: 1 }, { name: 'e', vlan: 2 }]]) {
      const err = await driver.start('hnB', hnics, within()).catch((e) => e);
      expect(err, JSON.stringify(hnics)).to.be.instanceOf(HeadnodeError);
    }
    expect(qemuProcesses(stateDir)).to.deep.equal([]);
  });

  it('isAlive follows the process, not the guest: a paused VM is alive, a killed one is not', async () => {
    await driver.create('hnP', 'base-headnode', within());
    await driver.start('hnP', [], within());
    await qmp(driver.qmpSocketPath('hnP'), 'stop'); // pause the guest
    expect(await driver.status('hnP', within())).to.deep.equal({ running: false, vncport: null });
    expect(await driver.isAlive('hnP', within())).to.equal(true);
    const pid = (await driver.processId('hnP'))!;
    // After a restart of the service, a paused guest is adopted as it is, not rebooted.
    const adopted = await make().recover('hnP', [], within());
    expect(adopted.vncport).to.be.a('number');
    expect(await driver.processId('hnP')).to.equal(pid);
    process.kill(pid, 'SIGKILL');
    await waitGone(pid);
    expect(await driver.isAlive('hnP', within())).to.equal(false);
    await driver.destroy('hnP', within());
  });

  it('a VM whose start a crash cut before its guest ran is let run when adopted, not left frozen yet reported running', async () => {
    // The service dies (kill -9) while putting the taps on OVS: QEMU, started paused (-S), outlives it.
    const dir = await fsp.mkdtemp(path.join(tmp, 'crash-'));
    const mark = path.join(dir, 'hang.pid');
    const wrapper = path.join(dir, 'ovs-vsctl');
    fs.writeFileSync(wrapper, `#!/bin/sh\nfor a; do if [ "$a" = add-port ]; then echo $$ > '${mark}.tmp'; mv '${mark}.tmp' '${mark}'; exec sleep 600; fi; done\nexec ovs-vsctl "$@"\n`, { mode: 0o755 });
    await driver.create('hnC', 'base-headnode', within());
    const hnics: HnicSpec[] = [{ name: 'eth0', vlan: 300 }];
    const opts = { imagesDir, stateDir, bridge: ovs.bridge, ovsDbSock: ovs.dbSock, ovsVsctlPath: wrapper };
    const script = path.join(dir, 'start.js');
    fs.writeFileSync(script, `const { QemuHeadnodeDriver } = require(${JSON.stringify(require.resolve('../../../../drivers/headnode/qemu'))});\n`
      + `new QemuHeadnodeDriver(${JSON.stringify(opts)}).start('hnC', ${JSON.stringify(hnics)}, new AbortController().signal);\n`);
    const child = spawn(process.execPath, [script], { stdio: 'ignore' });
    const exited = new Promise((r) => child.once('exit', r));
    try {
      const deadline = Date.now() + 30_000;
      while (!fs.existsSync(mark)) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error('the start never reached OVS');
        await sleep(50);
      }
    } finally {
      child.kill('SIGKILL');
      await exited;
      if (fs.existsSync(mark)) process.kill(Number(fs.readFileSync(mark, 'utf8')), 'SIGKILL');
    }
    const sock = driver.qmpSocketPath('hnC');
    expect(await qmp(sock, 'query-status')).to.include({ status: 'prelaunch' });
    // The next start (the service finishing the interrupted one) answers running: so it must be.
    const st = await driver.start('hnC', hnics, within());
    expect(st.running).to.equal(true);
    expect(await qmp(sock, 'query-status')).to.include({ running: true, status: 'running' });
    expect(await driver.status('hnC', within())).to.deep.equal(st);
    expect(await tag(driver.tapName('hnC', 'eth0'))).to.equal('300');
    await driver.destroy('hnC', within());
  });

  it('a QEMU that no state file records (a crash right after spawning it) is killed before the next boot', async () => {
    await driver.create('hnS', 'base-headnode', within());
    await driver.start('hnS', [{ name: 'eth0', vlan: 77 }], within());
    const stray = (await driver.processId('hnS'))!;
    for (const f of fs.readdirSync(stateDir)) if (f.startsWith('hnS-') && f.endsWith('.json')) fs.rmSync(path.join(stateDir, f));
    expect(await driver.processId('hnS')).to.equal(null); // the driver no longer knows it
    expect(alive(stray)).to.equal(true);
    const st = await driver.start('hnS', [{ name: 'eth0', vlan: 77 }], within());
    expect(st.running).to.equal(true);
    await waitGone(stray);
    expect(await driver.processId('hnS')).to.be.a('number').and.not.equal(stray);
    expect(await tag(driver.tapName('hnS', 'eth0'))).to.equal('77');
    // Unrecorded again: a delete finds and kills it too.
    const stray2 = (await driver.processId('hnS'))!;
    for (const f of fs.readdirSync(stateDir)) if (f.startsWith('hnS-') && f.endsWith('.json')) fs.rmSync(path.join(stateDir, f));
    await driver.destroy('hnS', within());
    await waitGone(stray2);
    // Its OVS row was known only to the state file this test deleted (a real stray dies before
    // its taps are plugged).
    await ovs.vsctl(['--if-exists', 'del-port', driver.tapName('hnS', 'eth0')]);
  });

  it('adopts a running VM after a restart although its base image file was removed', async () => {
    const base = path.join(imagesDir, 'other-image.qcow2');
    await driver.create('hnC', 'other-image', within());
    await driver.start('hnC', [], within());
    const pid = (await driver.processId('hnC'))!;
    fs.renameSync(base, `${base}.away`);
    try {
      const again = make();
      await again.create('hnC', 'other-image', within()); // the disk exists: no need for the base file
      expect((await again.recover('hnC', [], within())).running).to.equal(true);
      expect(await again.processId('hnC')).to.equal(pid);
      // A new headnode from the missing image is refused.
      expect(await again.create('hnD', 'other-image', within()).catch((e) => e)).to.be.instanceOf(HeadnodeError);
    } finally {
      fs.renameSync(`${base}.away`, base);
    }
    await driver.destroy('hnC', within());
  });

  it('boots a VM with 70 hnics (more than one PCI bus holds)', async () => {
    const hnics = Array.from({ length: 70 }, (_, i) => ({ name: `e${i}`, vlan: i % 3 ? 500 + i : null }));
    await driver.create('hnM', 'base-headnode', within());
    const st = await driver.start('hnM', hnics, within());
    expect(st.running).to.equal(true);
    expect(await vncBanner(st.vncport!)).to.match(/^RFB/);
    expect(await tag(driver.tapName('hnM', 'e68'))).to.equal('568');
    expect((await ports()).length).to.equal(hnics.filter((h) => h.vlan !== null).length);
    await driver.destroy('hnM', within());
    expect(await ports()).to.deep.equal([]);
  });

  it('gives a VM one NIC per hnic and no other: without hnics, none (no default user-mode NIC reaching the host)', async () => {
    // QEMU's own view of its network clients, one line each (`type=nic`, `type=tap`, `type=user`).
    const clients = async (name: string) => {
      const text: string = await qmp(driver.qmpSocketPath(name), 'human-monitor-command', { 'command-line': 'info network' });
      return [...text.matchAll(/type=(\w+)/g)].map((m) => m[1]).sort();
    };
    await driver.create('hnN', 'base-headnode', within());
    try {
      await driver.start('hnN', [], within());
      expect(await clients('hnN')).to.deep.equal([]);
      await driver.stop('hnN', within());
      await driver.start('hnN', [{ name: 'eth0', vlan: 600 }, { name: 'eth1', vlan: null }], within());
      expect(await clients('hnN')).to.deep.equal(['nic', 'nic', 'tap', 'tap']);
    } finally {
      await driver.destroy('hnN', within());
    }
  });

  it('keeps its QMP sockets in a private temp folder when the state folder is too long for unix sockets', async () => {
    const long = make({ stateDir: path.join(tmp, 'a-state-folder-with-a-long-name-'.repeat(4)) });
    const sock = long.qmpSocketPath('hnL');
    expect(sock.startsWith(os.tmpdir())).to.equal(true);
    expect(sock.length).to.be.at.most(107);
    await long.create('hnL', 'base-headnode', within());
    const st = await long.start('hnL', [], within());
    expect(await qmp(sock, 'query-status')).to.include({ running: true });
    expect(fs.statSync(path.dirname(sock)).mode & 0o777).to.equal(0o700);
    expect(await vncBanner(st.vncport!)).to.match(/^RFB/);
    await long.destroy('hnL', within());
    expect(fs.existsSync(sock)).to.equal(false);
    fs.rmSync(path.dirname(sock), { recursive: true, force: true });
  });

  // Two names whose sha256 share their first 10 hex digits (found by a birthday search): the
  // 40 bits earlier releases put in file names.
  const PAIR = ['headnode-of-project-alpha-for-the-cluster-e5cy', 'headnode-of-project-alpha-for-the-cluster-t1to'] as const;
  /** Where a release before 128-bit keys kept a headnode's files (stem of 40 chars + 10 hex digits). */
  const legacyStem = (name: string) =>
    path.join(stateDir, `${name.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_').slice(0, 40)}-${createHash('sha256').update(name).digest('hex').slice(0, 10)}`);
  const nameFile = (d: QemuHeadnodeDriver, name: string) => d.overlayPath(name).replace(/\.qcow2$/, '.name');
  const legacyDisk = (name: string) =>
    sh('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', path.join(imagesDir, 'base-headnode.qcow2'), `${legacyStem(name)}.qcow2`]);

  it('two names sharing 40 bits of hash get two disks: deleting one leaves the other', async () => {
    const [a, b] = PAIR;
    expect(legacyStem(a)).to.equal(legacyStem(b));
    await driver.create(a, 'base-headnode', within());
    await driver.create(b, 'base-headnode', within());
    expect(driver.overlayPath(b)).to.not.equal(driver.overlayPath(a));
    expect(driver.qmpSocketPath(b)).to.not.equal(driver.qmpSocketPath(a));
    await driver.destroy(b, within());
    expect(fs.existsSync(driver.overlayPath(a)), "a's disk").to.equal(true);
    await driver.destroy(a, within());
  });

  it('refuses to create, boot, stop or delete files recorded for another headnode', async () => {
    await driver.create('hnR', 'base-headnode', within());
    const own = fs.readFileSync(nameFile(driver, 'hnR'), 'utf8');
    fs.writeFileSync(nameFile(driver, 'hnR'), JSON.stringify({ version: 1, name: 'someone-else' }));
    for (const call of [
      () => driver.create('hnR', 'base-headnode', within()),
      () => driver.start('hnR', [], within()),
      () => driver.status('hnR', within()),
      () => driver.destroy('hnR', within()),
    ]) {
      expect(await call().catch((e) => e)).to.be.instanceOf(HeadnodeError).with.property('message').that.matches(/another headnode/);
    }
    expect(fs.existsSync(driver.overlayPath('hnR'))).to.equal(true);
    // A state file naming another headnode is not adopted, stopped or cleaned up either.
    fs.writeFileSync(nameFile(driver, 'hnR'), own);
    const stateFile = driver.overlayPath('hnR').replace(/\.qcow2$/, '.json');
    const foreign = { version: 1, name: 'someone-else', pid: process.pid, procStart: 'x', qmp: '/nonexistent', vncport: null, bridge: ovs.bridge, overlay: driver.overlayPath('hnR'), hnics: [], startedAt: '' };
    fs.writeFileSync(stateFile, JSON.stringify(foreign));
    for (const call of [() => driver.recover('hnR', [], within()), () => driver.stop('hnR', within()), () => driver.destroy('hnR', within())]) {
      expect(await call().catch((e) => e)).to.be.instanceOf(HeadnodeError).with.property('message').that.matches(/another headnode/);
    }
    expect(fs.existsSync(stateFile)).to.equal(true);
    fs.rmSync(stateFile);
    await driver.destroy('hnR', within());
    expect(fs.readdirSync(stateDir).filter((f) => f.startsWith('hnR-'))).to.deep.equal([]);
  });

  it("moves a stopped headnode's disk from an earlier release's file name once, and boots it", async () => {
    await legacyDisk('hnU');
    fs.writeFileSync(`${legacyStem('hnU')}.log`, 'old log\n');
    const ino = fs.statSync(`${legacyStem('hnU')}.qcow2`).ino;
    const again = make(); // the upgraded service
    await again.create('hnU', 'base-headnode', within());
    expect(fs.statSync(again.overlayPath('hnU')).ino, 'the same disk').to.equal(ino);
    expect(fs.existsSync(`${legacyStem('hnU')}.qcow2`)).to.equal(false);
    expect(fs.existsSync(`${legacyStem('hnU')}.log`)).to.equal(false);
    expect((await again.start('hnU', [], within())).running).to.equal(true);
    await again.destroy('hnU', within());
    expect(fs.readdirSync(stateDir).filter((f) => f.startsWith('hnU-'))).to.deep.equal([]);
  });

  it('adopts a VM an earlier release started, under its new file names', async () => {
    await driver.create('hnV', 'base-headnode', within());
    await driver.start('hnV', [{ name: 'eth0', vlan: 9 }], within());
    const pid = (await driver.processId('hnV'))!;
    // As an earlier release left it: the files under the short key, no name file.
    const stateFile = driver.overlayPath('hnV').replace(/\.qcow2$/, '.json');
    const st = JSON.parse(fs.readFileSync(stateFile, 'utf8'));
    fs.renameSync(driver.overlayPath('hnV'), `${legacyStem('hnV')}.qcow2`);
    fs.writeFileSync(`${legacyStem('hnV')}.json`, JSON.stringify({ ...st, overlay: `${legacyStem('hnV')}.qcow2` }));
    fs.rmSync(stateFile);
    fs.rmSync(nameFile(driver, 'hnV'));
    const again = make();
    expect(await again.processId('hnV')).to.equal(pid);
    expect((await again.recover('hnV', [{ name: 'eth0', vlan: 9 }], within())).running).to.equal(true);
    expect(await again.processId('hnV')).to.equal(pid);
    expect(JSON.parse(fs.readFileSync(stateFile, 'utf8')).overlay).to.equal(again.overlayPath('hnV'));
    expect(fs.existsSync(`${legacyStem('hnV')}.json`)).to.equal(false);
    await again.destroy('hnV', within());
    await waitGone(pid);
  });

  it("leaves an earlier release's files to the headnode their state file names", async () => {
    const [a, b] = PAIR;
    await legacyDisk(a);
    const legacyState = { version: 1, name: a, pid: 0x3fffff, procStart: 'x', qmp: '/nonexistent', vncport: null, bridge: ovs.bridge, overlay: `${legacyStem(a)}.qcow2`, hnics: [], startedAt: '' };
    fs.writeFileSync(`${legacyStem(a)}.json`, JSON.stringify(legacyState));
    const ino = fs.statSync(`${legacyStem(a)}.qcow2`).ino;
    await driver.create(b, 'base-headnode', within()); // b's own, new disk
    expect(fs.statSync(driver.overlayPath(b)).ino).to.not.equal(ino);
    await driver.destroy(b, within());
    expect(fs.statSync(`${legacyStem(a)}.qcow2`).ino, "a's disk stays").to.equal(ino);
    await driver.create(a, 'base-headnode', within()); // a takes its own
    expect(fs.statSync(driver.overlayPath(a)).ino).to.equal(ino);
    await driver.destroy(a, within());
    expect(fs.readdirSync(stateDir).filter((f) => f.startsWith('headnode-of'))).to.deep.equal([]);
  });

  it('close() stops every VM the instance started or adopted; no QEMU outlives it', async () => {
    await driver.create('hnC', 'base-headnode', within());
    await driver.start('hnB', [{ name: 'eth0', vlan: 7 }], within());
    const adopter = make();
    await adopter.recover('hnB', [{ name: 'eth0', vlan: 7 }], within());
    await driver.start('hnC', [], within());
    expect(qemuProcesses(stateDir)).to.have.length(2);
    await Promise.all(drivers.map((d) => d.close(within())));
    expect(qemuProcesses(tmp)).to.deep.equal([]);
    expect(await ports()).to.deep.equal([]);
  });
});
