/**
 * The runbook's Metrics table (docs/operations.md) against what a running service exports: every
 * family a scrape shows is a documented row with that type and those labels, every row is
 * exported, and every alert the runbook suggests names families and labels that exist. Read
 * from a live scrape, not from the source: a metric made anywhere (src/metrics.ts, a driver,
 * prom-client's defaults) is caught.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Registry } from 'prom-client';
import { startTestServer, stopTestServer, TestServer, Client, must, makeNode, mockSwitch, finished } from '../../helpers/server';
import { Exposition, parseExposition } from '../../helpers/prometheus';
import { section, rows } from '../../helpers/markdown';

const ROOT = join(__dirname, '..', '..', '..', '..');
const runbook = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');

interface Row { type: string; labels: string[] }

/** The Metrics table: family → its type and labels (the `process_*`, `nodejs_*` row apart). */
export function documentedMetrics(): Map<string, Row> {
  const out = new Map<string, Row>();
  for (const [name, type, labels] of rows(section(runbook, 'Metrics'), '| metric |')) {
    const m = /^`(hilt_\w+)`$/.exec(name);
    if (!m) continue;
    out.set(m[1], { type, labels: labels ? labels.split(',').map((l) => l.trim()).sort() : [] });
  }
  return out;
}

/** The alerts table: name → its PromQL (without its `for` duration). */
function documentedAlerts(): [string, string][] {
  return rows(section(runbook, 'Metrics'), '| alert |').map(([name, expr]) => [name, expr.replace(/^`|` for \w+$|`$/g, '')]);
}

/** A family's label names: prom-client's own list where it has one, else its samples' (the request metrics). */
function labelsOf(registry: Registry, scrape: Exposition, family: string): string[] {
  const metric = registry.getSingleMetric(family) as { labelNames?: string[] } | undefined;
  if (metric?.labelNames) return [...metric.labelNames].sort();
  const names = new Set<string>();
  for (const s of scrape.samples) {
    if (s.name === family || s.name === `${family}_bucket` || s.name === `${family}_sum` || s.name === `${family}_count`) {
      for (const l of Object.keys(s.labels)) if (l !== 'le') names.add(l);
    }
  }
  return [...names].sort();
}

describe('the runbook\'s metrics against a live scrape', function () {
  this.timeout(60_000);
  let ts: TestServer;
  let api: Client;
  let scrape: Exposition;
  /** documented families absent until their condition: the map's use (LMDB only), a backup's outcome (LMDB only) */
  let conditional: Set<string>;

  before(async () => {
    ts = await startTestServer({ headnodeDriver: 'mock' });
    api = ts.api;
    // A little of everything: inventory, a network operation, a power call, a refused login, a
    // missing call, a backup (LMDB; a 409 elsewhere), a pass of journal retention, an auditor's scrape.
    await must(api.put('/project/p'));
    await must(api.put('/switch/s1', mockSwitch));
    await makeNode(api, 'n1', ['eth0']);
    await must(api.put('/switch/s1/port/gi1/0/1'));
    await must(api.post('/switch/s1/port/gi1/0/1/connect_nic', { node: 'n1', nic: 'eth0' }));
    await must(api.post('/project/p/connect_node', { node: 'n1' }));
    await must(api.put('/network/w', { owner: 'p', access: 'p', net_id: '' }));
    const id = (await must(api.post('/node/n1/nic/eth0/connect_network', { network: 'w' }), 202)).body.status_id;
    expect((await finished(api, id)).status).to.equal('DONE');
    await must(api.get('/node/n1/power_status'));
    await api.with({ user: 'admin', password: 'wrong' }).get('/nodes/free');
    await api.get('/no/such/call');
    await api.post('/admin/backup', { path: join(ts.dataDir, '..', `backup-${process.pid}-${Date.now()}`) });
    await must(api.put('/auth/basic/user/prom', { password: 'prom-secret', role: 'auditor' }));
    await ts.retention.pass();
    conditional = ts.config.storage === 'lmdb' ? new Set() : new Set(['hilt_storage_used_bytes', 'hilt_backup_last_success_timestamp_seconds', 'hilt_backup_last_duration_seconds']);
    scrape = parseExposition((await must(api.with({ user: 'prom', password: 'prom-secret' }).get('/metrics'))).text);
  });
  after(() => stopTestServer(ts));

  it('exports every documented metric, with the documented type and labels', () => {
    const docs = documentedMetrics();
    expect(docs.size).to.be.at.least(40);
    for (const [name, row] of docs) {
      if (conditional.has(name)) continue;
      expect(scrape.types.get(name), `${name}: its type`).to.equal(row.type);
      expect(labelsOf(ts.metrics.registry, scrape, name), `${name}: its labels`).to.deep.equal(row.labels);
    }
  });

  it('documents every family it exports (prom-client\'s process_* and nodejs_* as one row)', () => {
    const docs = documentedMetrics();
    expect(section(runbook, 'Metrics')).to.include('| `process_*`, `nodejs_*` |');
    for (const name of scrape.types.keys()) {
      if (/^(process|nodejs)_/.test(name)) continue;
      expect(docs.has(name), `${name} in docs/operations.md, Metrics`).to.equal(true);
    }
  });

  it('the suggested alerts name families and labels that exist', () => {
    const docs = documentedMetrics();
    const alerts = documentedAlerts();
    expect(alerts.length).to.be.at.least(20);
    for (const [alert, expr] of alerts) {
      // `up` and `job` are Prometheus's own.
      for (const m of expr.matchAll(/\b((?:hilt|nodejs|process)_\w+)(\{([^}]*)\})?/g)) {
        const series = m[1];
        const family = [series, series.replace(/_(bucket|sum|count)$/, '')].find((f) => scrape.types.has(f) || conditional.has(f));
        expect(family, `${alert}: ${series} is exported`).to.not.equal(undefined);
        const own = conditional.has(family!) ? docs.get(family!)!.labels : labelsOf(ts.metrics.registry, scrape, family!);
        const labels = new Set([...own, 'job', ...(series.endsWith('_bucket') ? ['le'] : [])]);
        for (const l of (m[3] ?? '').matchAll(/(\w+)\s*(=~|!=|!~|=)/g)) expect(labels.has(l[1]), `${alert}: ${series} has the label ${l[1]}`).to.equal(true);
        if (family!.startsWith('hilt_')) expect(docs.has(family!), `${alert}: ${family} is documented`).to.equal(true);
      }
      // Each `by (...)` groups by labels of the metrics it sums.
      for (const m of expr.matchAll(/by \(([^)]*)\) \(([^()]*(?:\([^()]*\)[^()]*)*)\)/g)) {
        const inner = [...m[2].matchAll(/\b(hilt_\w+)/g)].map((x) => x[1].replace(/_(bucket|sum|count)$/, ''));
        for (const l of m[1].split(',').map((x) => x.trim())) {
          for (const f of inner) expect([...labelsOf(ts.metrics.registry, scrape, f), 'le'], `${alert}: ${f} has the label ${l}`).to.include(l);
        }
      }
    }
  });

  it('the counters the alerts read with increase() carry their series from 0, before the first event (a series that appears at 1 shows no increase)', () => {
    const series = (name: string, labels: Record<string, string>) => scrape.samples.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
    const present = [
      ['hilt_storage_commits_total', { kind: 'node', outcome: 'refused' }],
      ['hilt_network_operations_finished_total', { switch: 's1', type: 'connect', status: 'ERROR' }],
      ['hilt_device_queue_calls_total', { queue: 'switch', outcome: 'timeout' }],
      ['hilt_device_queue_calls_total', { queue: 'obm', outcome: 'expired' }],
      ['hilt_device_queue_calls_total', { queue: 'headnode', outcome: 'timeout' }],
      ['hilt_backups_total', { outcome: ts.config.storage === 'lmdb' ? 'error' : 'ok' }],
      ['hilt_webhook_deliveries_total', { outcome: 'error' }],
      ['hilt_event_streams_dropped_total', { reason: 'buffer' }],
      ['hilt_release_power_offs_total', { outcome: 'error' }],
      ['hilt_maintenance_deliveries_total', { outcome: 'error' }],
    ] as const;
    for (const [name, labels] of present) {
      const found = series(name, labels);
      expect(found.map((x) => x.value), `${name}${JSON.stringify(labels)}`).to.deep.equal([0]);
    }
  });

  it('shows a switch\'s operation outcomes from 0 after a restart while operations from before it are pending', async () => {
    const slow = await startTestServer({ mockSwitchDelayMs: 3000 });
    const dir = slow.dataDir;
    let again: TestServer | undefined;
    try {
      const a = slow.api;
      await must(a.put('/project/p'));
      await must(a.put('/switch/s2', mockSwitch));
      await makeNode(a, 'n2', ['eth0']);
      await must(a.put('/switch/s2/port/gi1/0/2'));
      await must(a.post('/switch/s2/port/gi1/0/2/connect_nic', { node: 'n2', nic: 'eth0' }));
      await must(a.post('/project/p/connect_node', { node: 'n2' }));
      await must(a.put('/network/w2', { owner: 'p', access: 'p', net_id: '' }));
      const id = (await must(a.post('/node/n2/nic/eth0/connect_network', { network: 'w2' }), 202)).body.status_id;
      await stopTestServer(slow, false);
      again = await startTestServer({ mockSwitchDelayMs: 3000 }, {}, dir);
      expect((await must(again.api.get(`/networking_action/${id}`))).body.status).to.equal('PENDING');
      const m = parseExposition((await must(again.api.get('/metrics'))).text);
      expect(m.samples.filter((x) => x.name === 'hilt_network_operations_pending' && x.labels.switch === 's2').map((x) => x.value)).to.deep.equal([1]);
      const errors = m.samples.filter((x) => x.name === 'hilt_network_operations_finished_total' && x.labels.switch === 's2' && x.labels.status === 'ERROR');
      expect(errors.map((x) => x.labels.type).sort()).to.deep.equal(['connect', 'detach', 'reapply', 'revert']);
      expect(errors.every((x) => x.value === 0)).to.equal(true);
    } finally {
      if (again) await stopTestServer(again);
    }
  });

  it('forgets a deleted switch\'s wiring verdicts: a switch made again under its name has had no check', async () => {
    const verdicts = async () => parseExposition((await must(api.get('/metrics'))).text).samples.filter((x) => x.name === 'hilt_wiring_ports' && x.labels.switch === 's3');
    await must(api.put('/switch/s3', mockSwitch));
    await must(api.put('/switch/s3/port/gi1/0/3'));
    await must(api.get('/admin/switch/s3/wiring'));
    expect(await verdicts()).to.not.deep.equal([]);
    await must(api.del('/switch/s3/port/gi1/0/3'));
    await must(api.del('/switch/s3'));
    expect(await verdicts()).to.deep.equal([]);
    await must(api.put('/switch/s3', mockSwitch));
    expect(await verdicts()).to.deep.equal([]);
  });
});
