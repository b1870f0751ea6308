/**
 * The hnics' taps on the Open vSwitch bridge. Linux bridges cannot carry VLANs on these kernels
 * (no 8021q); OVS with the netdev datapath can, through each port's `tag`.
 *
 * - An hnic with no network (vlan null) still gets a NIC and a tap, but the tap is NOT added to
 *   the bridge and stays down: the guest sees a NIC with nothing behind it. (An untagged OVS port
 *   would be a trunk carrying every VLAN, so "no tag" is never an option.)
 * - Attached taps are `vlan_mode=access`: frames the guest tags itself are dropped by OVS.
 */
import * as fsp from 'node:fs/promises';
import { ovsdbRemote } from '../../switch/ovs';

import { HeadnodeError } from '../types';
import { run } from './exec';
import type { TapState } from './state';

export interface OvsOptions {
  bridge: string;
  /** OVS database socket: a path or `unix:PATH` (ovs-vsctl --db=unix:PATH); default: ovs-vsctl's default socket. */
  dbSock?: string;
  /** Extra environment for ovs-vsctl (e.g. OVS_RUNDIR). */
  env?: NodeJS.ProcessEnv;
  vsctlPath?: string;
  /** iproute2's `ip`, used to bring taps up (OVS does not). */
  ipPath?: string;
}

/**
 * Keep the host's own IPv6 (link-local address, DAD, MLD, router solicitations) off a tap: OVS reads
 * netdev ports with a packet socket that also sees what the host transmits, so the host's chatter
 * on the tap would otherwise be switched into the project's VLAN.
 */
async function quietIpv6(dev: string): Promise<void> {
  try {
    await fsp.writeFile(`/proc/sys/net/ipv6/conf/${dev}/disable_ipv6`, '1');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e; // ENOENT: kernel without IPv6
  }
}

export class OvsBridge {
  readonly bridge: string;
  private readonly vsctl: string;
  private readonly ip: string;
  private readonly args: string[];
  private readonly env: NodeJS.ProcessEnv | undefined;

  constructor(opts: OvsOptions) {
    this.bridge = opts.bridge;
    this.vsctl = opts.vsctlPath ?? 'ovs-vsctl';
    this.ip = opts.ipPath ?? 'ip';
    // No --timeout: ovs-vsctl waits for vswitchd to apply a change, and the caller's signal
    // decides how long that may take.
    // HILT_OVS_DB as the Open vSwitch switch driver takes it: a path or unix:PATH.
    this.args = opts.dbSock ? [`--db=${ovsdbRemote(opts.dbSock)}`] : [];
    this.env = opts.env ? { ...process.env, ...opts.env } : undefined;
  }

  /** One ovs-vsctl transaction of the commands (`--`-separated). */
  private run(cmds: string[][], signal: AbortSignal) {
    return run(this.vsctl, [...this.args, ...cmds.flatMap((c, i) => (i ? ['--', ...c] : c))], signal, { env: this.env });
  }

  /** Remove these taps' ports, where they exist. */
  async removePorts(taps: string[], signal: AbortSignal): Promise<void> {
    if (taps.length) await this.run(taps.map((t) => ['--if-exists', 'del-port', t]), signal);
  }

  /**
   * Put attached taps on the bridge with their VLAN (access ports); take unattached ones off it
   * (`fresh`: the taps were just created, so none is on it yet).
   */
  async plug(taps: TapState[], fresh: boolean, signal: AbortSignal): Promise<void> {
    const attached = taps.filter((t) => t.vlan !== null);
    if (attached.length) {
      await Promise.all(attached.map((t) => quietIpv6(t.tap)));
      // One `ip` for all of them: a VM may have dozens of hnics.
      await run(this.ip, ['-batch', '-'], signal, { input: attached.map((t) => `link set dev ${t.tap} up\n`).join('') });
    }
    const cmds: string[][] = [];
    for (const t of taps) {
      if (t.vlan === null) {
        if (!fresh) cmds.push(['--if-exists', 'del-port', t.tap]);
        continue;
      }
      cmds.push(['--may-exist', 'add-port', this.bridge, t.tap]);
      cmds.push(['set', 'port', t.tap, `tag=${t.vlan}`, 'vlan_mode=access', 'trunks=[]']);
    }
    if (!cmds.length) return;
    const { stderr } = await this.run(cmds, signal);
    // ovs-vsctl exits 0 but warns when vswitchd could not open a device.
    if (/error detected|could not open/i.test(stderr)) {
      throw new HeadnodeError(`adding hnics to OVS bridge ${this.bridge}: ${stderr.trim()}`);
    }
  }
}
