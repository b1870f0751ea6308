/**
 * What the switch-family tests over HTTP share (test/src/routes/switch-{ssh,rest,fabrics}.test.ts):
 * a service logging at debug level into `logs`, a client keeping the text of every answer in
 * `texts` (both read by the tests that no switch secret leaks), project `p` with networks
 * net-a, net-b and net-c and their VLANs; a switch's three nodes of that project wired to four
 * of its ports; and the network operations as the project's clients make them. The failure
 * tests (switch-*-failures.test.ts) share a node wired alone, a timed connect and how a failure
 * is checked.
 */
import { expect } from 'chai';
import { createServer } from 'node:net';
import { Client, startTestServer, stopTestServer, TestServer, must, makeNode, finished } from './server';
import { RecordingClient } from './switch-sims';
import { loggerOptions } from '../../src/redact';

export const NETWORKS = ['net-a', 'net-b', 'net-c'] as const;

export interface SwitchFamilyService {
  /** set by the suite's before-hook */
  ts: TestServer;
  api: RecordingClient;
  logs: string[];
  texts: string[];
  /** each network's VLAN */
  vlan: Record<string, number>;
}

/** Hooks of the calling suite: the service started before its tests, stopped after them. */
export function switchFamilyService(): SwitchFamilyService {
  const s = { logs: [], texts: [], vlan: {} } as unknown as SwitchFamilyService;
  before(async () => {
    s.ts = await startTestServer({ switchTimeoutMs: 20_000 }, { logger: loggerOptions('debug', { write: (l: string) => void s.logs.push(l) }) });
    s.api = new RecordingClient(s.ts.url, s.texts);
    await must(s.api.put('/project/p'));
    for (const w of NETWORKS) await must(s.api.put(`/network/${w}`, { owner: 'p', access: 'p', net_id: '' }));
    const list = (await must(s.api.get('/networks'))).body;
    for (const w of NETWORKS) s.vlan[w] = Number(list[w].network_id);
  });
  after(() => stopTestServer(s.ts));
  return s;
}

/**
 * On switch `sw`: node `<prefix>-a` with nics eth0 and eth1 on its first two ports, `<prefix>-b`
 * and `<prefix>-c` with eth0 each on the third and fourth, all three in project p.
 */
export async function wireThreeNodes(api: RecordingClient, sw: string, ports: readonly string[], n: (x: string) => string): Promise<void> {
  const [p1, p2, p3, p4] = ports;
  await makeNode(api, n('a'), ['eth0', 'eth1']);
  await makeNode(api, n('b'), ['eth0']);
  await makeNode(api, n('c'), ['eth0']);
  const wire = async (port: string, node: string, nic: string) => {
    await must(api.put(`/switch/${sw}/port/${port}`));
    await must(api.post(`/switch/${sw}/port/${port}/connect_nic`, { node, nic }));
  };
  await wire(p1, n('a'), 'eth0');
  await wire(p2, n('a'), 'eth1');
  await wire(p3, n('b'), 'eth0');
  await wire(p4, n('c'), 'eth0');
  for (const x of ['a', 'b', 'c']) await must(api.post('/project/p/connect_node', { node: n(x) }));
}

/** A network operation on a nic: accepted (202), then its status once finished. */
export async function operation(api: RecordingClient, node: string, nic: string, action: 'connect_network' | 'detach_network', body: Record<string, unknown>): Promise<any> {
  const r = await api.post(`/node/${node}/nic/${nic}/${action}`, body);
  expect(r.status, r.text).to.equal(202);
  return finished(api, r.body.status_id);
}

/** The operation ended DONE. */
export async function done(p: Promise<any>): Promise<void> {
  const s = await p;
  expect(s.status, JSON.stringify(s)).to.equal('DONE');
}

/** A nic's networks, as show_node gives them. */
export async function networksOf(api: RecordingClient, node: string, nic: string): Promise<Record<string, string>> {
  return (await must(api.get(`/node/${node}`))).body.nics.find((x: any) => x.label === nic).networks;
}

/** A port on 127.0.0.1 where nothing listens: a switch that cannot be reached. */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Switch `sw` registered with `body`, its `port` wired to `node`'s eth0, a fresh node of project p. */
export async function wiredNode(api: Client, sw: string, body: Record<string, unknown>, port: string, node: string): Promise<void> {
  await must(api.put(`/switch/${sw}`, body));
  await must(api.put(`/switch/${sw}/port/${port}`));
  await makeNode(api, node, ['eth0']);
  await must(api.post(`/switch/${sw}/port/${port}/connect_nic`, { node, nic: 'eth0' }));
  await must(api.post('/project/p/connect_node', { node }));
}

export interface Timed { s: any; ms: number }

/** Connect the node's eth0 to w natively (or as `body` says): its final status, and how long it took. */
export async function timedConnect(api: Client, node: string, body: Record<string, unknown> = { network: 'w' }): Promise<Timed> {
  const t0 = Date.now();
  const r = await api.post(`/node/${node}/nic/eth0/connect_network`, body);
  expect(r.status, r.text).to.equal(202);
  const s = await finished(api, r.body.status_id);
  return { s, ms: Date.now() - t0 };
}

/** The operation ended ERROR for `reason`, within `bound` ms (SHOW_SWITCH_ERRORS prints each reason). */
export function failedWithin(r: Timed, bound: number, reason: RegExp): void {
  expect(r.s.status, JSON.stringify(r.s)).to.equal('ERROR');
  if (process.env.SHOW_SWITCH_ERRORS) process.stdout.write(`      ${r.ms} ms: ${r.s.error}\n`);
  expect(r.s.error).to.match(reason);
  expect(r.ms, `ended after ${r.ms} ms`).to.be.below(bound);
}

/** A failure that sent the switch no change: its reason is the plain one, nothing set back. */
export function plainFailure(r: { s: any }): void {
  expect(r.s.error).not.to.match(/back to the configuration|setting the port back/);
}
