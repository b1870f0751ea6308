/**
 * Mock headnode driver, for labs and demos on machines without QEMU: VMs live in memory, a "running"
 * VM gets a fake VNC port from a counter (nothing listens on it), base images come from a list.
 * It enforces the same rules as the real driver (disk before start, valid VLANs, unique hnics) so
 * that code exercised against it behaves the same against QEMU.
 */
import type { DriverEntry } from '../registry';
import { pause } from '../../lib/time';
import { HeadnodeError, NO_FIELDS, type HeadnodeDriver, type HeadnodeStatus, type HnicSpec } from './types';

export interface MockHeadnodeOptions {
  /** Base image names listImages() reports and create() accepts. Default ['base-headnode']. */
  images?: string[];
  /** First fake VNC port handed out. Default 5900. */
  firstVncPort?: number;
  /**
   * Delay of every start, stop, recover and destroy (labs: watch the transitional states). An
   * aborted signal ends it, and the call then does nothing.
   */
  delayMs?: number;
}

export interface MockVm {
  baseImage: string;
  running: boolean;
  vncport: number | null;
  hnics: HnicSpec[];
  /** How many times the VM was booted (start, or recover of a VM that was not running). */
  boots: number;
}

export class MockHeadnodeDriver implements HeadnodeDriver {
  private readonly images: string[];
  private readonly vms = new Map<string, MockVm>();
  private nextPort: number;
  private readonly delayMs: number;

  constructor(opts: MockHeadnodeOptions = {}) {
    this.images = [...(opts.images ?? ['base-headnode'])];
    this.nextPort = opts.firstVncPort ?? 5900;
    this.delayMs = opts.delayMs ?? 0;
  }

  private async slow(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (this.delayMs) await pause(this.delayMs, signal);
  }

  /** Inspect a VM (tests, demos). */
  vm(name: string): Readonly<MockVm> | undefined {
    const vm = this.vms.get(name);
    return vm && { ...vm, hnics: vm.hnics.map((h) => ({ ...h })) };
  }

  /** Simulate the VM dying behind the driver's back (e.g. QEMU crashed). */
  crash(name: string): void {
    const vm = this.vms.get(name);
    if (vm) {
      vm.running = false;
      vm.vncport = null;
    }
  }

  private need(name: string): MockVm {
    const vm = this.vms.get(name);
    if (!vm) throw new HeadnodeError(`headnode ${name} has no disk: create it first`);
    return vm;
  }

  private boot(vm: MockVm, hnics: HnicSpec[]): HeadnodeStatus {
    const seen = new Set<string>();
    for (const h of hnics) {
      if (seen.has(h.name)) throw new HeadnodeError(`duplicate hnic ${h.name}`);
      seen.add(h.name);
      if (h.vlan !== null && !(Number.isInteger(h.vlan) && h.vlan >= 1 && h.vlan <= 4094)) {
        throw new HeadnodeError(`hnic ${h.name} has invalid VLAN ${String(h.vlan)} (1-4094 or null)`);
      }
    }
    // Like QEMU: VLANs of a running VM can be re-applied, but a different set of NICs needs a reboot.
    const sameNics = vm.hnics.length === hnics.length && vm.hnics.every((h, i) => h.name === hnics[i]!.name);
    if (vm.running && !sameNics) vm.running = false;
    vm.hnics = hnics.map((h) => ({ ...h }));
    if (!vm.running) {
      vm.running = true;
      vm.vncport = this.nextPort++;
      vm.boots++;
    }
    return { running: true, vncport: vm.vncport };
  }

  async listImages(_signal: AbortSignal): Promise<string[]> {
    return [...this.images].sort();
  }

  async create(name: string, baseImage: string, _signal: AbortSignal): Promise<void> {
    if (!this.images.includes(baseImage)) throw new HeadnodeError(`no base image ${baseImage}`);
    const vm = this.vms.get(name);
    if (vm) {
      if (vm.baseImage !== baseImage) {
        throw new HeadnodeError(`headnode ${name} already has a disk, based on ${vm.baseImage}, not ${baseImage}`);
      }
      return;
    }
    this.vms.set(name, { baseImage, running: false, vncport: null, hnics: [], boots: 0 });
  }

  async start(name: string, hnics: HnicSpec[], signal: AbortSignal): Promise<HeadnodeStatus> {
    await this.slow(signal);
    return this.boot(this.need(name), hnics);
  }

  async stop(name: string, signal: AbortSignal): Promise<void> {
    await this.slow(signal);
    const vm = this.vms.get(name);
    if (vm) {
      vm.running = false;
      vm.vncport = null;
    }
  }

  async status(name: string, _signal: AbortSignal): Promise<HeadnodeStatus> {
    const vm = this.vms.get(name);
    return vm?.running ? { running: true, vncport: vm.vncport } : { running: false, vncport: null };
  }

  async isAlive(name: string, _signal: AbortSignal): Promise<boolean> {
    return this.vms.get(name)?.running ?? false;
  }

  async recover(name: string, hnics: HnicSpec[], signal: AbortSignal): Promise<HeadnodeStatus> {
    await this.slow(signal);
    return this.boot(this.need(name), hnics);
  }

  async destroy(name: string, signal: AbortSignal): Promise<void> {
    await this.slow(signal);
    this.vms.delete(name);
  }

  async close(_signal: AbortSignal): Promise<void> {
    for (const vm of this.vms.values()) {
      vm.running = false;
      vm.vncport = null;
    }
  }
}

/** HILT_HEADNODE_DRIVER=mock: the configured base images, HILT_MOCK_HEADNODE_DELAY_MS per operation. */
export const mockHeadnode: DriverEntry<HeadnodeDriver> = {
  type: 'mock',
  extension: 'hilt.headnodes.mock',
  fields: NO_FIELDS,
  create: ({ settings: config }) => new MockHeadnodeDriver({ images: config.baseImages, delayMs: config.mockHeadnodeDelayMs }),
};
