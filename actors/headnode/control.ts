/**
 * Drives headnode VMs: start, stop and delete, recovery after a restart, and a monitor that
 * notices VMs that died. The slow part (booting or killing QEMU) runs outside the headnode
 * actor's mailbox (DESIGN.md rule 4); the actor records the intent first (`starting`,
 * `stopping`, `deleting`) and the outcome after, both durably. Operations on one headnode run
 * one after another in a chain of their own, so the driver never sees two at once.
 */
import { HiltError } from '../../src/errors';
import type { HeadnodeDriver } from '../../drivers/headnode/types';
import type { World } from '../world';
import { SerialQueues } from '../serial';
import { bootSpec } from './actor';
import type { BootSpec } from './protocol';

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

export interface HeadnodeControlOptions {
  /** how often running VMs are checked (0: never) */
  checkMs: number;
}

export class HeadnodeControl {
  private readonly queues = new SerialQueues();
  private readonly monitor?: NodeJS.Timeout;
  private closed = false;
  /** where recovery and monitor failures are reported */
  log?: { warn(obj: object, msg: string): void };

  constructor(private readonly world: World, readonly driver: HeadnodeDriver, opts: HeadnodeControlOptions) {
    if (opts.checkMs > 0) this.monitor = setInterval(() => this.checkAll(), opts.checkMs).unref();
  }

  /** Installed base images. */
  images(): Promise<string[]> {
    return this.driver.listImages().catch((err) => {
      throw new HiltError('HeadnodeError', `listing base images: ${errorText(err)}`);
    });
  }

  /** headnode_start: boot the VM with its hnics; 502 HeadnodeError when the driver fails. */
  start(name: string, by: string): Promise<void> {
    return this.chain(name, async () => {
      const spec = await this.world.headnodes.ask<BootSpec>(name, { type: 'headnode.beginStart', by });
      const vncport = await this.boot(name, spec).catch(async (err) => {
        await this.world.headnodes.ask(name, { type: 'headnode.endStart', by, vncport: null, error: errorText(err) });
        throw new HiltError('HeadnodeError', `starting headnode ${name}: ${errorText(err)}`);
      });
      await this.world.headnodes.ask(name, { type: 'headnode.endStart', by, vncport, error: null });
    });
  }

  /** headnode_stop: a forced power off. */
  stop(name: string, by: string): Promise<void> {
    return this.chain(name, async () => {
      await this.world.headnodes.ask(name, { type: 'headnode.beginStop', by });
      await this.finish(name, by, 'headnode.endStop', () => this.driver.stop(name), 'stopping');
    });
  }

  /** headnode_delete: in any state; the VM, its disk and its taps go first, then the record. */
  delete(name: string, by: string): Promise<void> {
    return this.chain(name, async () => {
      await this.world.headnodes.ask(name, { type: 'headnode.beginDelete', by });
      await this.finish(name, by, 'headnode.endDelete', () => this.driver.destroy(name), 'deleting');
    });
  }

  /**
   * After a start: finish what a crash interrupted, bring back every VM that should run
   * (adopting it if it still runs), and make sure nothing runs for a headnode that should not.
   * Runs in the background; calls on a headnode wait for its recovery.
   */
  recover(): void {
    const by = 'recovery';
    for (const h of this.world.rm.headnodes.values()) {
      const name = h.name;
      void this.chain(name, async () => {
        const state = this.world.rm.headnodes.get(name);
        if (!state) return;
        switch (state.status) {
          case 'starting':
          case 'running': {
            const spec = bootSpec(this.world, state);
            let vncport: number | null = null;
            let error: string | null = null;
            try {
              await this.driver.create(name, spec.baseImg);
              const st = await this.driver.recover(name, spec.hnics);
              vncport = st.vncport;
            } catch (err) {
              error = `could not bring the VM back after a restart of the service: ${errorText(err)}`;
            }
            if (state.status === 'starting') {
              await this.world.headnodes.ask(name, { type: 'headnode.endStart', by, vncport, error });
            } else {
              await this.world.headnodes.ask(name, { type: 'headnode.observed', by, running: error === null, vncport, error });
            }
            break;
          }
          case 'stopping':
            await this.finish(name, by, 'headnode.endStop', () => this.driver.stop(name), 'stopping').catch(() => undefined);
            break;
          case 'deleting':
            await this.finish(name, by, 'headnode.endDelete', () => this.driver.destroy(name), 'deleting').catch(() => undefined);
            break;
          default:
            // created, stopped, died: a VM left running (e.g. a crash during a start) goes.
            await this.driver.stop(name);
        }
      }).catch((err) => this.log?.warn({ err, headnode: name }, 'headnode recovery failed'));
    }
  }

  /** Check every running VM; one that is gone is recorded as died (with its leftovers removed). */
  checkAll(): void {
    for (const h of this.world.rm.headnodes.values()) {
      if (h.status !== 'running' || this.queues.busy(h.name)) continue;
      const name = h.name;
      void this.chain(name, async () => {
        if (this.world.rm.headnodes.get(name)?.status !== 'running') return;
        const st = await this.driver.status(name);
        let error: string | null = null;
        if (!st.running) {
          error = 'the VM stopped running without a stop call (QEMU exited or was killed)';
          await this.driver.stop(name).catch(() => undefined); // its taps and sockets
        }
        await this.world.headnodes.ask(name, { type: 'headnode.observed', by: 'monitor', running: st.running, vncport: st.vncport, error });
      }).catch((err) => this.log?.warn({ err, headnode: name }, 'headnode check failed'));
    }
  }

  /** Stop the monitor and wait for operations in progress; VMs keep running (recover adopts them). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.monitor) clearInterval(this.monitor);
    await this.queues.idle();
  }

  private async boot(name: string, spec: BootSpec): Promise<number | null> {
    await this.driver.create(name, spec.baseImg);
    return (await this.driver.start(name, spec.hnics)).vncport;
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

  private chain<T>(name: string, op: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new HiltError('ServiceUnavailableError', 'the service is shutting down'));
    return this.queues.run(name, op);
  }
}
