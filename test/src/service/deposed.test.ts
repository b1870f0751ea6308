/**
 * Hardware calls of an active process that lost its lease (src/lease-guard.ts): a power call or
 * a VM operation that waited on its device while another process took the lease over never
 * reaches the device. In one process: another client takes the lease over, as a standby does
 * once the active one's TTL ran out while it was paused.
 */
import { expect } from 'chai';
import { Client as PgClient } from 'pg';
import { ADMIN, finished, must, startTestServer, stopTestServer, TestServer } from '../../helpers/server';
import { watch } from '../../helpers/console-ws';
import { freshDatabase } from '../../helpers/postgres';
import { loggerOptions } from '../../../src/redact';
import { MockHeadnodeDriver } from '../../../drivers/headnode/mock';
import type { HeadnodeStatus, HnicSpec } from '../../../drivers/headnode/types';
import type { ConsoleIo, ConsoleLink, ObmDriver, ObmDriverEntry, PowerState } from '../../../drivers/obm/types';
import type { DriverFields } from '../../../drivers/registry';
import { until, sleep } from '../../helpers/wait';

/** A gate: calls that pass it wait until it opens. */
class Gate {
  private opened: Promise<void> = Promise.resolve();
  private open: () => void = () => undefined;
  hold(): void {
    this.opened = new Promise((r) => (this.open = r));
  }
  release(): void {
    this.open();
  }
  wait(): Promise<void> {
    return this.opened;
  }
}

/** A BMC that records the calls reaching it; each waits at the gate. */
class RecordingBmc implements ObmDriver {
  readonly calls: string[] = [];
  readonly gate = new Gate();
  private async call(what: string, fields: DriverFields): Promise<void> {
    this.calls.push(`${what} ${fields.host}`);
    await this.gate.wait();
  }
  powerCycle = (f: DriverFields) => this.call('cycle', f);
  powerOff = (f: DriverFields) => this.call('off', f);
  powerOn = (f: DriverFields) => this.call('on', f);
  setBootDevice = (f: DriverFields) => this.call('bootdev', f);
  powerStatus = async (f: DriverFields): Promise<PowerState> => (await this.call('status', f), 'on');
  /** console sessions: opened at once (not at the gate), their ends recorded */
  async openConsole(f: DriverFields, io: ConsoleIo): Promise<ConsoleLink> {
    this.calls.push(`console ${f.host}`);
    let open = true;
    return {
      write: () => true,
      close: () => {
        if (!open) return;
        open = false;
        this.calls.push(`console closed ${f.host}`);
        queueMicrotask(() => io.ended('closed'));
      },
    };
  }
}

const recording: ObmDriverEntry<RecordingBmc> = {
  type: 'http://schema.massopencloud.org/haas/v0/obm/test-recording',
  extension: 'test.obm.recording',
  fields: { type: 'object', additionalProperties: false, required: ['host', 'user', 'password'], properties: { host: { type: 'string' }, user: { type: 'string' }, password: { type: 'string' } } },
  create: () => new RecordingBmc(),
  device: (fields) => String(fields.host),
};

/** The mock VMs, recording the calls that reach them; create() waits at the gate. */
class RecordingVms extends MockHeadnodeDriver {
  readonly calls: string[] = [];
  readonly gate = new Gate();
  override async create(name: string, baseImage: string, signal: AbortSignal): Promise<void> {
    this.calls.push(`create ${name}`);
    await this.gate.wait();
    return super.create(name, baseImage, signal);
  }
  override async start(name: string, hnics: HnicSpec[], signal: AbortSignal): Promise<HeadnodeStatus> {
    this.calls.push(`start ${name}`);
    return super.start(name, hnics, signal);
  }
  override async stop(name: string, signal: AbortSignal): Promise<void> {
    this.calls.push(`stop ${name}`);
    return super.stop(name, signal);
  }
}

describe('hardware calls of an active process deposed while they wait', function () {
  this.timeout(30_000);
  let url: string;
  let ts: TestServer | undefined;
  let logs: string[];
  beforeEach(async () => {
    url = await freshDatabase();
    logs = [];
  });
  const start = (deps: Parameters<typeof startTestServer>[1]) => startTestServer(
    { storage: 'postgres', databaseUrl: url, leaseTtlMs: 2000, instanceName: 'a' },
    { ...deps, logger: loggerOptions('info', { write: (l: string) => void logs.push(l) }) },
  );
  afterEach(async () => {
    if (ts) await stopTestServer(ts);
    ts = undefined;
  });

  /**
   * Another process takes the lease over (as a standby does after the TTL); this one notices at
   * its next renewal and steps down (it takes the lease again at once after: the other holds no
   * session, as a process that died).
   */
  async function takeOver(): Promise<void> {
    const c = new PgClient({ connectionString: url });
    await c.connect();
    await c.query("UPDATE hilt_lease SET token = token + 1, holder = 'other', renewed_at = now()");
    await c.end();
    await until('the deposed process steps down', () => logs.some((l) => l.includes('"msg":"stepping down"')));
  }

  it('a power call queued behind a slow one at its BMC is refused with 503 when its turn comes; nothing of it reaches the BMC', async () => {
    ts = await start({ extraDrivers: { obm: [recording] } });
    const bmc = ts.drivers.obm.driver(recording.type) as RecordingBmc;
    const obm = { type: recording.type, host: 'bmc-shared', user: 'u', password: 'p' };
    for (const n of ['n1', 'n2']) await must(ts.api.put(`/node/${n}`, { obm }));

    bmc.gate.hold();
    const first = ts.api.post('/node/n1/power_off');
    await until('the first call is at the BMC', () => bmc.calls.length === 1);
    const queued = ts.api.post('/node/n2/power_cycle');
    await sleep(50);
    await takeOver();
    bmc.gate.release();

    // The first call had reached the BMC before: it cannot be taken back, and it ends.
    expect((await first).status).to.equal(200);
    const r = await queued;
    expect(r.status, r.text).to.equal(503);
    expect(r.body.type).to.equal('ServiceUnavailableError');
    expect(r.body.msg).to.match(/no longer holds the lease/);
    expect(r.headers['retry-after']).to.equal('2');
    expect(bmc.calls).to.deep.equal(['off bmc-shared']);
  });

  it('a console session ends as soon as the lease is lost, not once the step-down has closed the rest', async () => {
    ts = await start({ extraDrivers: { obm: [recording] } });
    const bmc = ts.drivers.obm.driver(recording.type) as RecordingBmc;
    for (const n of ['n1', 'n2']) await must(ts.api.put(`/node/${n}`, { obm: { type: recording.type, host: `bmc-${n}`, user: 'u', password: 'p' } }));
    await must(ts.api.put('/node/n1/console'));
    await until('the console session is open', () => bmc.calls.includes('console bmc-n1'));
    const viewer = await watch(ts.url, 'n1', ADMIN);

    // A power call at another BMC: the step-down waits for its answer before it closes the activation.
    bmc.gate.hold();
    const power = ts.api.post('/node/n2/power_off');
    await until('the power call is at its BMC', () => bmc.calls.includes('off bmc-n2'));
    try {
      await takeOver();
      await until('the console session ends', () => bmc.calls.includes('console closed bmc-n1'), 1500);
      const closed = await viewer.closed;
      expect(closed.code).to.equal(4503);
      expect(closed.reason).to.match(/no longer the active one/);
    } finally {
      bmc.gate.release();
    }
    expect((await power).status).to.be.oneOf([200, 503]);
  });

  it('a headnode start whose disk was being made when the lease went boots nothing, and powers nothing off', async () => {
    const vms = new RecordingVms();
    ts = await start({ headnodeDriver: vms });
    await must(ts.api.put('/project/p'));
    await must(ts.api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));

    vms.gate.hold();
    const starting = ts.api.post('/headnode/h/start');
    await until('the disk is being made', () => vms.calls.length === 1);
    await takeOver();
    vms.gate.release();

    const r = await starting;
    // Its outcome (failed) cannot be recorded either: the database refuses it for the token.
    expect(r.status, r.text).to.equal(503);
    expect(r.body.msg).to.match(/fencing token \d+ is no longer the lease's/);
    expect(vms.calls).to.deep.equal(['create h']);
    expect(vms.vm('h')).to.include({ running: false, boots: 0 });
  });
});

describe('a network operation of an active process that lost its lease before its switch turn', function () {
  this.timeout(60_000);
  let url: string;
  let ts: TestServer | undefined;
  const logs: string[] = [];
  afterEach(async () => {
    if (ts) await stopTestServer(ts);
    ts = undefined;
  });

  it('stays PENDING (not ERROR) when the lease is lost with its token still current, and the next activation carries it out', async () => {
    url = await freshDatabase();
    ts = await startTestServer(
      // The switch's login takes a while: the lease is lost while the operation waits for it.
      { storage: 'postgres', databaseUrl: url, leaseTtlMs: 2000, instanceName: 'a', mockSwitchSessionDelayMs: 800 },
      { extraDrivers: { obm: [recording] }, logger: loggerOptions('info', { write: (l: string) => void logs.push(l) }) },
    );
    const api = ts.api;
    const bmc = ts.drivers.obm.driver(recording.type) as RecordingBmc;
    await must(api.put('/project/p'));
    await must(api.put('/node/n1', { obm: { type: recording.type, host: 'bmc-1', user: 'u', password: 'p' } }));
    await must(api.put('/node/n1/nic/eth0', { macaddr: 'aa:bb:cc:dd:ee:01' }));
    await must(api.put('/switch/sw', { type: 'http://schema.massopencloud.org/haas/v0/switches/mock', hostname: 'sw', username: 'u', password: 'p' }));
    await must(api.put('/switch/sw/port/gi1/0/1'));
    await must(api.post('/switch/sw/port/gi1/0/1/connect_nic', { node: 'n1', nic: 'eth0' }));
    await must(api.post('/project/p/connect_node', { node: 'n1' }));
    await must(api.put('/network/net', { owner: 'p', access: 'p', net_id: '' }));

    // A power call at its BMC: the step-down waits for its answer before it closes the world.
    bmc.gate.hold();
    const power = api.post('/node/n1/power_off');
    await until('the power call is at the BMC', () => bmc.calls.length === 1);
    const accepted = await must(api.post('/node/n1/nic/eth0/connect_network', { network: 'net' }), 202);
    const id = accepted.body.status_id as string;

    // The lease's connection breaks (nobody else took the lease: its token is still current).
    const admin = new PgClient({ connectionString: url });
    await admin.connect();
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'hilt a lease'");
    await admin.end();
    await until('a steps down', () => logs.some((l) => l.includes('"msg":"stepping down"')));
    // The switch's login ends meanwhile; its change is refused by the lease guard.
    await sleep(1500);
    bmc.gate.release();
    expect((await power).status).to.be.oneOf([200, 503]);

    // The same process takes the lease again (nobody else wants it) and resumes what is pending.
    await until('a is active again', async () => ts!.role === 'active' && (await api.get('/health', { as: null })).status === 200, 20_000);
    const status = await finished(api, id);
    expect(status.status, JSON.stringify(status)).to.equal('DONE');
    expect(ts.mockSwitch.ports('sw')['gi1/0/1']?.native).to.be.a('number');
  });
});

describe('a headnode VM being brought back when the activation that recovers it loses its lease', function () {
  this.timeout(60_000);
  let ts: TestServer | undefined;
  const logs: string[] = [];
  afterEach(async () => {
    if (ts) await stopTestServer(ts);
    ts = undefined;
  });

  /** The lease's connection breaks; nobody else took the lease: its token stays current. */
  async function breakLease(url: string): Promise<void> {
    const admin = new PgClient({ connectionString: url });
    await admin.connect();
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'hilt a lease'");
    await admin.end();
  }

  it('stays running in the store, and the next activation brings it back', async () => {
    const url = await freshDatabase();
    const vms = new RecordingVms();
    ts = await startTestServer(
      { storage: 'postgres', databaseUrl: url, leaseTtlMs: 2000, instanceName: 'a' },
      { headnodeDriver: vms, logger: loggerOptions('info', { write: (l: string) => void logs.push(l) }) },
    );
    const api = ts.api;
    await must(api.put('/project/p'));
    await must(api.put('/headnode/h', { project: 'p', base_img: 'base-headnode' }));
    await must(api.post('/headnode/h/start'));
    const steppedDown = () => logs.filter((l) => l.includes('"msg":"stepping down"')).length;
    const activations = () => logs.filter((l) => l.includes('"msg":"active: serving the API"')).length;

    // A first blip: the next activation recovers the VM, whose disk step waits at the gate.
    vms.gate.hold();
    vms.calls.length = 0;
    await breakLease(url);
    await until('a is active again', () => activations() === 2, 20_000);
    await until('the recovery is making the disk', () => vms.calls.includes('create h'));
    // A second blip while it waits: the recovery's next call is refused by the lease guard.
    await breakLease(url);
    await until('a steps down again', () => steppedDown() === 2);
    vms.gate.release();

    await until('a is active a third time', () => activations() === 3, 20_000);
    await ts.headnodesRecovered;
    const r = await must(api.get('/headnode/h'));
    expect(r.body.vncport, JSON.stringify(r.body)).to.be.a('number');
    expect(vms.vm('h')).to.include({ running: true });
  });
});

describe('hardware calls of an active process whose write the database refused for its token', function () {
  this.timeout(60_000);
  let ts: TestServer | undefined;
  let url: string;
  const logs: string[] = [];
  afterEach(async () => {
    await sql(url, 'DELETE FROM test_hang_lease').catch(() => undefined);
    if (ts) await stopTestServer(ts);
    ts = undefined;
  });

  async function sql(u: string, text: string): Promise<void> {
    const c = new PgClient({ connectionString: u });
    await c.connect();
    try {
      await c.query(text);
    } finally {
      await c.end();
    }
  }

  it('are refused at once, although the lease\'s own renewals have not told it yet', async () => {
    url = await freshDatabase();
    ts = await startTestServer(
      { storage: 'postgres', databaseUrl: url, leaseTtlMs: 10_000, instanceName: 'a' },
      { extraDrivers: { obm: [recording] }, logger: loggerOptions('info', { write: (l: string) => void logs.push(l) }) },
    );
    const bmc = ts.drivers.obm.driver(recording.type) as RecordingBmc;
    const obm = { type: recording.type, host: 'bmc-shared', user: 'u', password: 'p' };
    for (const n of ['n1', 'n2']) await must(ts.api.put(`/node/${n}`, { obm }));

    // The lease's renewals hang (as on a connection whose packets are dropped), holding no lock.
    await sql(url, `CREATE TABLE test_hang_lease (x int); INSERT INTO test_hang_lease VALUES (1);
      CREATE FUNCTION test_hang() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        WHILE current_setting('application_name') = 'hilt a lease' AND EXISTS (SELECT 1 FROM test_hang_lease) LOOP PERFORM pg_sleep(0.05); END LOOP;
        RETURN NULL;
      END $$;
      CREATE TRIGGER test_hang BEFORE UPDATE ON hilt_lease FOR EACH STATEMENT EXECUTE FUNCTION test_hang();`);
    await sleep(1500);

    bmc.gate.hold();
    const first = ts.api.post('/node/n1/power_off');
    await until('the first call is at the BMC', () => bmc.calls.length === 1);
    const queued = ts.api.post('/node/n2/power_cycle');
    await sleep(50);
    // Another process takes the lease over; this one's next write is refused for its token.
    await sql(url, "UPDATE hilt_lease SET token = token + 1, holder = 'other', renewed_at = now()");
    const late = await ts.api.put('/project/late');
    expect(late.status, late.text).to.equal(503);
    await until('the deposed process steps down', () => logs.some((l) => l.includes('"msg":"stepping down"')));
    bmc.gate.release();

    expect((await first).status).to.equal(200);
    const r = await queued;
    expect(r.status, r.text).to.equal(503);
    expect(bmc.calls).to.deep.equal(['off bmc-shared']);
  });
});
