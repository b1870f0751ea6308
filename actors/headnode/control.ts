/**
 * Drives headnode VMs: start, stop and delete, recovery after a restart, and a monitor that
 * notices VMs that died. The slow part (booting or killing QEMU) runs outside the headnode
 * actor's mailbox (DESIGN.md rule 4); the actor records the intent first (`starting`,
 * `stopping`, `deleting`) and the outcome after, both durably. Operations on one headnode run
 * one after another in a queue of their own, so the driver never sees two at once, and a
 * headnode found in a transitional state at the head of its queue was interrupted (a crash, or
 * an outcome that could not be recorded): it is repaired before anything else.
 */
import { HiltError } from '../../src/errors';
import type { HeadnodeDriver } from '../../drivers/headnode/types';
import type { World } from '../world';
import { SerialQueues } from '../serial';
import { bootSpec } from './actor';
import type { BootSpec } from './protocol';

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

export interface HeadnodeControlOptions {
  /** the installed base images (decisions.md §9: HIL_BASE_IMG) */
  baseImages: string[];
  /** how often running VMs are checked (0: never) */
  checkMs: number;
}

export class HeadnodeControl {
  private readonly queues = new SerialQueues();
  private readonly monitor?: NodeJS.Timeout;
  private closed = false;
  /** where recovery and monitor failures are reported */
  log?: { warn(obj: object, msg: string): void };

  constructor(private readonly world: World, readonly driver: HeadnodeDriver, private readonly opts: HeadnodeControlOptions) {
    if (opts.checkMs > 0) this.monitor = setInterval(() => this.checkAll(), opts.checkMs).unref();
  }

  /**
   * Installed base images: the configured ones (decisions.md §9, HIL_BASE_IMG) and every image
   * the driver has (for qemu, each NAME.qcow2 in the images folder).
   */
  async images(): Promise<string[]> {
    const files = await this.driver.listImages().catch((err) => {
      throw new HiltError('HeadnodeError', `listing base images: ${errorText(err)}`);
    });
    return [...new Set([...this.opts.baseImages, ...files])].sort();
  }

  /** headnode_start: boot the VM with its hnics; 502 HeadnodeError when the driver fails. */
  start(name: string, by: string): Promise<void> {
    return this.chain(name, async (repaired) => {
      // An interrupted start was just finished: that is what the caller asked for.
      if (repaired && this.world.rm.headnodes.get(name)?.status === 'running') return;
      const spec = await this.world.headnodes.ask(name, { type: 'headnode.beginStart', by });
      const { vncport, error } = await this.boot(name, spec, (hnics) => this.driver.start(name, hnics));
      await this.world.headnodes.ask(name, { type: 'headnode.endStart', by, vncport, error });
      if (error !== null) throw new HiltError('HeadnodeError', `starting headnode ${name}: ${error}`);
    });
  }

  /** headnode_stop: a forced power off. */
  stop(name: string, by: string): Promise<void> {
    return this.chain(name, async (repaired) => {
      if (repaired && this.world.rm.headnodes.get(name)?.status === 'stopped') return;
      await this.world.headnodes.ask(name, { type: 'headnode.beginStop', by });
      await this.finishStop(name, by);
    });
  }

  /** headnode_delete: in any state; the VM, its disk and its taps go first, then the record. */
  delete(name: string, by: string): Promise<void> {
    return this.chain(name, async () => {
      await this.world.headnodes.ask(name, { type: 'headnode.beginDelete', by });
      await this.finishDelete(name, by);
    });
  }

  /**
   * After a start of the service: finish what a crash interrupted, bring back every VM that
   * should run (adopting it if it still runs), and make sure nothing runs for a headnode that
   * should not. Runs in the background; calls on a headnode wait for its recovery. Resolves
   * when every headnode has been seen to.
   */
  async recover(): Promise<void> {
    // Queued now, before the first HTTP call can queue anything.
    const recovered = Promise.all([...this.world.rm.headnodes.keys()].map((name) =>
      this.queues.run(name, async () => {
        const status = this.world.rm.headnodes.get(name)?.status;
        if (status === 'running') await this.revive(name, 'a restart of the service');
        // created, stopped, died: a VM left running (e.g. by a crash during a start) goes.
        else if (status === 'created' || status === 'stopped' || status === 'died') await this.driver.stop(name);
        else if (status === 'deleting') await this.finishDelete(name, 'recovery').catch(() => undefined);
        else await this.repair(name);
      }).catch((err) => this.log?.warn({ err, headnode: name }, 'headnode recovery failed'))));
    const installed = await this.driver.listImages().catch(() => [] as string[]);
    const missing = this.opts.baseImages.filter((i) => !installed.includes(i));
    if (missing.length) this.log?.warn({ missing }, 'configured headnode base images have no image file: starting headnodes made from them will fail');
    await recovered;
  }

  /**
   * Check every running VM; one whose process is gone is recorded as died, its leftovers
   * removed. A headnode left starting or stopping with nothing queued was interrupted: the
   * queue's repair finishes it.
   */
  checkAll(): void {
    for (const h of this.world.rm.headnodes.values()) {
      if (this.queues.busy(h.name)) continue;
      const name = h.name;
      if (h.status === 'starting' || h.status === 'stopping') {
        void this.chain(name, async () => undefined).catch((err) => this.log?.warn({ err, headnode: name }, 'headnode repair failed'));
        continue;
      }
      if (h.status !== 'running') continue;
      void this.chain(name, async () => {
        if (this.world.rm.headnodes.get(name)?.status !== 'running') return;
        // Only a VM that is gone is dead: a paused or slow guest is left alone.
        if (await this.driver.isAlive(name)) return;
        await this.forceOff(name); // its taps and sockets
        await this.world.headnodes.ask(name, {
          type: 'headnode.observed', by: 'monitor', running: false, vncport: null, error: 'the VM stopped running without a stop call (QEMU exited or was killed)',
        });
      }).catch((err) => this.log?.warn({ err, headnode: name }, 'headnode check failed'));
    }
  }

  /** Stop the monitor and wait for operations in progress; VMs keep running (recover adopts them). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.monitor) clearInterval(this.monitor);
    await this.queues.idle();
  }

  /**
   * A headnode that should run: adopt its VM or boot it again; if neither works, make sure
   * nothing of it runs and record why. Also finishes an interrupted start.
   */
  private async revive(name: string, why: string): Promise<void> {
    const state = this.world.rm.headnodes.get(name);
    if (!state) return;
    const booted = await this.boot(name, bootSpec(this.world, state), (hnics) => this.driver.recover(name, hnics));
    const vncport = booted.vncport;
    const error = booted.error && `could not bring the VM back after ${why}: ${booted.error}`;
    const by = 'recovery';
    if (state.status === 'starting') await this.world.headnodes.ask(name, { type: 'headnode.endStart', by, vncport, error });
    else await this.world.headnodes.ask(name, { type: 'headnode.observed', by, running: error === null, vncport, error });
  }

  /**
   * Finish a start or stop that was interrupted (it is at the head of the queue, so nothing
   * else runs). A delete that failed stays `deleting` until it is asked for again.
   */
  private async repair(name: string): Promise<boolean> {
    const status = this.world.rm.headnodes.get(name)?.status;
    if (status === 'starting') await this.revive(name, 'an interrupted start');
    else if (status === 'stopping') await this.finishStop(name, 'recovery').catch(() => undefined);
    else return false;
    return true;
  }

  private finishStop(name: string, by: string): Promise<void> {
    return this.finish(name, by, 'headnode.endStop', () => this.driver.stop(name), 'stopping');
  }

  private finishDelete(name: string, by: string): Promise<void> {
    return this.finish(name, by, 'headnode.endDelete', () => this.driver.destroy(name), 'deleting');
  }

  /** Make the disk, then `run` (start or recover); on failure nothing of the VM keeps running. */
  private async boot(name: string, spec: BootSpec, run: (hnics: BootSpec['hnics']) => Promise<{ vncport: number | null }>) {
    try {
      await this.driver.create(name, spec.baseImg);
      return { vncport: (await run(spec.hnics)).vncport, error: null };
    } catch (err) {
      await this.forceOff(name);
      return { vncport: null, error: errorText(err) };
    }
  }

  /** Best effort: after a failure nothing of the VM may keep running unrecorded. */
  private async forceOff(name: string): Promise<void> {
    await this.driver.stop(name).catch((err) => this.log?.warn({ err, headnode: name }, 'could not power off a failed headnode VM'));
  }

  /** Run the driver call, record its outcome with `command`; a failure is a 502 HeadnodeError. */
  private async finish(
    name: string, by: string, command: 'headnode.endStop' | 'headnode.endDelete', call: () => Promise<void>, doing: string,
  ): Promise<void> {
    let error: string | null = null;
    try {
      await call();
    } catch (err) {
      error = errorText(err);
    }
    await this.world.headnodes.ask(name, { type: command, by, error });
    if (error !== null) throw new HiltError('HeadnodeError', `${doing} headnode ${name}: ${error}`);
  }

  /** Queue `op` for the headnode, after finishing an interrupted start or stop (`repaired`). */
  private chain<T>(name: string, op: (repaired: boolean) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new HiltError('ServiceUnavailableError', 'the service is shutting down'));
    return this.queues.run(name, async () => op(await this.repair(name)));
  }
}
