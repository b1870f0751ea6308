/**
 * Drives headnode VMs: start, stop and delete, recovery after a restart, and a monitor that
 * notices VMs that died. The slow part (booting or killing QEMU) runs outside the headnode
 * actor's mailbox (docs/actors.md, rule 4); the actor records the intent first (`starting`,
 * `stopping`, `deleting`) and the outcome after, both durably. Operations on one headnode run
 * one after another in the device queue, so the driver never sees two at once, and a headnode
 * found in a transitional state at the head of its queue was interrupted (a crash, or an
 * outcome that could not be recorded): it is repaired before anything else.
 *
 * Each operation has HILT_HEADNODE_TIMEOUT_MS once it has the headnode; its signal goes to every
 * driver call. One that runs out of time is answered 502 at once, while what follows a failure
 * still happens in the headnode's turn: powering the VM off (within a budget of its own, since
 * the operation's signal has aborted) and recording the outcome.
 */
import { HiltError } from '../actors/errors';
import type { HeadnodeDriver } from '../drivers/headnode/types';
import type { Asker } from '../actors/runtime';
import type { AskOptions } from '../actors/behavior';
import type { ReadModel } from '../actors/readmodel';
import type { HeadnodeCommand, HeadnodeReplies } from '../actors/headnode/protocol';
import { DeviceQueue } from './device-queue';
import { bootSpec } from '../actors/headnode/actor';
import type { BootSpec } from '../actors/headnode/protocol';
import { instrument, NO_TELEMETRY, Telemetry } from '../actors/telemetry';
import { sleep } from '../lib/time';
import { MAY_ACT_POLL_MS } from './network-operations';

/** The driver's calls, as metrics name them. */
const DRIVER_CALLS = {
  listImages: 'list_images', create: 'create', start: 'start', stop: 'stop', status: 'status',
  isAlive: 'is_alive', recover: 'recover', destroy: 'destroy', close: 'close',
};

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

export interface HeadnodeControlOptions {
  /** the installed base images (docs/api-conventions.md §9: HIL_BASE_IMG) */
  baseImages: string[];
  /** how often running VMs are checked (0: never) */
  checkMs: number;
  /** bound on each VM operation, and on the power-off after one that failed (HILT_HEADNODE_TIMEOUT_MS) */
  timeoutMs: number;
  /** where driver calls and the queue report (metrics) */
  telemetry?: Telemetry;
  /** the driver's name in metrics (HILT_HEADNODE_DRIVER) */
  driverName?: string;
  /** false once this process may no longer act as the active one (its lease lost; absent: always may) */
  mayAct?: () => boolean;
}

/** What HeadnodeControl needs: the committed view and the headnode actors. */
export interface HeadnodeControlDeps {
  rm: ReadModel;
  headnodes: Asker<HeadnodeCommand, HeadnodeReplies>;
}

export class HeadnodeControl {
  /**
   * Keyed by headnode name. A timed-out operation keeps its headnode until it has finished (by
   * default up to 4 × timeoutMs): its power-off gets one timeoutMs, and recording the outcome
   * is quick unless storage stalls.
   */
  private readonly queue: DeviceQueue;
  private monitor?: NodeJS.Timeout;
  private closed = false;
  /** where recovery and monitor failures are reported */
  log?: { warn(obj: object, msg: string): void };

  /** the driver (its calls timed for metrics; a mock's own methods are there too) */
  readonly driver: HeadnodeDriver;

  constructor(private readonly world: HeadnodeControlDeps, driver: HeadnodeDriver, private readonly opts: HeadnodeControlOptions) {
    const telemetry = opts.telemetry ?? NO_TELEMETRY;
    const name = opts.driverName ?? 'headnode';
    this.driver = instrument(driver, DRIVER_CALLS, (call, seconds, ok) => telemetry.driverCall('headnode', name, call, seconds, ok));
    this.queue = new DeviceQueue({
      timeoutMs: opts.timeoutMs,
      timeoutError: (m) => new HiltError('HeadnodeError', `headnode ${m}`),
      observe: (e) => telemetry.deviceCall('headnode', e.waitedMs / 1000, e.outcome),
    });
  }

  /** VM operations queued or running, on every headnode. */
  size(): number {
    return this.queue.size();
  }

  /**
   * Installed base images: the configured ones (docs/api-conventions.md §9, HIL_BASE_IMG) and every image
   * the driver has (for qemu, each NAME.qcow2 in the images folder).
   */
  async images(): Promise<string[]> {
    const files = await this.driver.listImages(this.budget('listing base images')).catch((err) => {
      throw new HiltError('HeadnodeError', `listing base images: ${errorText(err)}`);
    });
    return [...new Set([...this.opts.baseImages, ...files])].sort();
  }

  /**
   * headnode_start: boot the VM with its hnics; 502 HeadnodeError when the driver fails.
   * `opts` (of start, stop and delete): the caller's late check, run in the headnode's turn.
   */
  start(name: string, by: string, opts: AskOptions = {}): Promise<void> {
    return this.chain(name, 'starting the VM', async (signal, repaired) => {
      // An interrupted start was just finished: that is what the caller asked for.
      if (repaired && this.world.rm.headnodes.get(name)?.status === 'running') return;
      const spec = await this.world.headnodes.ask(name, { type: 'headnode.beginStart', by }, opts);
      const { vncport, error, mayRun } = await this.boot(name, spec, signal, (hnics) => this.driver.start(name, hnics, signal));
      await this.world.headnodes.ask(name, { type: 'headnode.endStart', by, vncport, error, mayRun });
      if (error !== null) throw new HiltError('HeadnodeError', `starting headnode ${name}: ${error}`);
    });
  }

  /** headnode_stop: a forced power off. */
  stop(name: string, by: string, opts: AskOptions = {}): Promise<void> {
    return this.chain(name, 'stopping the VM', async (signal, repaired) => {
      // `created`: the power-off a failed first start owed was just done.
      const status = repaired ? this.world.rm.headnodes.get(name)?.status : undefined;
      if (status === 'stopped' || status === 'created') return;
      await this.world.headnodes.ask(name, { type: 'headnode.beginStop', by }, opts);
      await this.finishStop(name, by, signal);
    });
  }

  /** The calls on the headnode queued or running in its device queue. */
  queued(name: string): number {
    return this.queue.depth(name);
  }

  /** headnode_delete: in any state; the VM, its disk and its taps go first, then the record. */
  delete(name: string, by: string, opts: AskOptions = {}): Promise<void> {
    return this.chain(name, 'deleting the VM', async (signal) => {
      await this.world.headnodes.ask(name, { type: 'headnode.beginDelete', by }, opts);
      await this.finishDelete(name, by, signal);
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
      this.queue.run(name, async (signal) => {
        await this.untilMayAct(signal);
        const status = this.world.rm.headnodes.get(name)?.status;
        if (status === 'running') await this.revive(name, 'a restart of the service', signal);
        // created, stopped, died: a VM left running (e.g. by a crash during a start) goes.
        else if (status === 'created' || status === 'stopped' || status === 'died') await this.driver.stop(name, signal);
        else if (status === 'deleting') await this.finishDelete(name, 'recovery', signal).catch(() => undefined);
        else await this.repair(name, signal);
      }, { what: 'recovering the VM' }).catch((err) => this.log?.warn({ err, headnode: name }, 'headnode recovery failed'))));
    // The monitor starts only now: a check queued before a headnode's recovery would record a VM
    // that died while the service was down as died, and the recovery would then not boot it again.
    if (this.opts.checkMs > 0 && !this.monitor && !this.closed) this.monitor = setInterval(() => this.checkAll(), this.opts.checkMs).unref();
    const installed = await this.driver.listImages(this.budget('listing base images')).catch(() => [] as string[]);
    const missing = this.opts.baseImages.filter((i) => !installed.includes(i));
    if (missing.length) this.log?.warn({ missing }, 'configured headnode base images have no image file: starting headnodes made from them will fail');
    await recovered;
  }

  /**
   * Check every running VM; one whose process is gone is recorded as died, its leftovers
   * removed. A headnode left starting or stopping with nothing queued was interrupted, or owes
   * the power-off a failed start could not do: the queue's repair finishes it (retried each check).
   */
  checkAll(): void {
    for (const h of this.world.rm.headnodes.values()) {
      if (this.queue.busy(h.name)) continue;
      const name = h.name;
      if (h.status === 'starting' || h.status === 'stopping') {
        void this.chain(name, 'finishing an interrupted operation', async () => undefined)
          .catch((err) => this.log?.warn({ err, headnode: name }, 'headnode repair failed'));
        continue;
      }
      if (h.status !== 'running') continue;
      void this.chain(name, 'checking the VM', async (signal) => {
        if (this.world.rm.headnodes.get(name)?.status !== 'running') return;
        // Only a VM that is gone is dead: a paused or slow guest is left alone.
        if (await this.driver.isAlive(name, signal)) return;
        await this.forceOff(name); // its taps and sockets
        await this.world.headnodes.ask(name, {
          type: 'headnode.observed', by: 'monitor', running: false, vncport: null, error: 'the VM stopped running without a stop call (QEMU exited or was killed)',
        });
      }).catch((err) => this.log?.warn({ err, headnode: name }, 'headnode check failed'));
    }
  }

  /**
   * A process that took the lease over moments ago waits until it may act (the process before it
   * may still be acting: actors/persistence/lease.ts) before it brings back, stops or repairs a
   * VM; one that lost the lease waits until it closes, and the next active process does it.
   */
  private async untilMayAct(signal: AbortSignal): Promise<void> {
    while (this.opts.mayAct && !this.opts.mayAct() && !this.closed && !signal.aborted) await sleep(MAY_ACT_POLL_MS);
  }

  /** Stop the monitor and wait for operations in progress; VMs keep running (recover adopts them). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.monitor) clearInterval(this.monitor);
    await this.queue.idle();
  }

  /**
   * A headnode that should run: adopt its VM or boot it again; if neither works, make sure
   * nothing of it runs and record why. Also finishes an interrupted start.
   */
  private async revive(name: string, why: string, signal: AbortSignal): Promise<void> {
    await this.untilMayAct(signal);
    const state = this.world.rm.headnodes.get(name);
    if (!state) return;
    const booted = await this.boot(name, bootSpec(this.world, state), signal, (hnics) => this.driver.recover(name, hnics, signal));
    // A process that lost its lease records no failure (its calls may have been refused for that
    // alone): the headnode still should run, and the next active process brings it back.
    if (booted.error !== null && this.opts.mayAct && !this.opts.mayAct()) throw new Error(`not recorded: this process no longer holds the lease (${booted.error})`);
    const { vncport, mayRun } = booted;
    const error = booted.error && `could not bring the VM back after ${why}: ${booted.error}`;
    const by = 'recovery';
    if (state.status === 'starting') await this.world.headnodes.ask(name, { type: 'headnode.endStart', by, vncport, error, mayRun });
    else await this.world.headnodes.ask(name, { type: 'headnode.observed', by, running: error === null, vncport, error, mayRun });
  }

  /**
   * Finish a start or stop that was interrupted (it is at the head of the queue, so nothing
   * else runs). A delete that failed stays `deleting` until it is asked for again.
   */
  private async repair(name: string, signal: AbortSignal): Promise<boolean> {
    const status = this.world.rm.headnodes.get(name)?.status;
    if (status === 'starting') await this.revive(name, 'an interrupted start', signal);
    else if (status === 'stopping') {
      await this.finishStop(name, 'recovery', signal).catch((err) => {
        // A power-off still owed (the VM may run on its hnics' VLANs): nothing else may go ahead.
        if (this.world.rm.headnodes.get(name)?.status === 'stopping') throw err;
      });
    }
    else return false;
    return true;
  }

  /** A stop that fails is recorded as such: the headnode stays `running`, watched by the monitor. */
  private finishStop(name: string, by: string, signal: AbortSignal): Promise<void> {
    return this.finish(name, by, 'headnode.endStop', () => this.driver.stop(name, signal), 'stopping');
  }

  /** A delete that fails leaves the headnode `deleting`, which the monitor does not watch: its VM is powered off. */
  private finishDelete(name: string, by: string, signal: AbortSignal): Promise<void> {
    return this.finish(name, by, 'headnode.endDelete', async () => {
      try {
        await this.driver.destroy(name, signal);
      } catch (err) {
        await this.forceOff(name);
        throw err;
      }
    }, 'deleting');
  }

  /**
   * Make the disk, then `run` (start or recover); on failure the VM is powered off, and when
   * that fails too the outcome says it may still run (`mayRun`), so it is never recorded as off.
   */
  private async boot(
    name: string, spec: BootSpec, signal: AbortSignal, run: (hnics: BootSpec['hnics']) => Promise<{ vncport: number | null }>,
  ): Promise<{ vncport: number | null; error: string | null; mayRun: boolean }> {
    try {
      await this.driver.create(name, spec.baseImg, signal);
      const { vncport } = await run(spec.hnics);
      // A start that ended after its deadline was answered 502 (and the queue may have given the
      // headnode to the next call): its VM goes, as when the driver heeds the signal.
      signal.throwIfAborted();
      return { vncport, error: null, mayRun: false };
    } catch (err) {
      const offError = await this.forceOff(name);
      if (offError === null) return { vncport: null, error: errorText(err), mayRun: false };
      return { vncport: null, error: `${errorText(err)}; powering the VM off failed too: ${offError}`, mayRun: true };
    }
  }

  /**
   * After a failure nothing of the VM may keep running unrecorded: the reason a power-off failed,
   * or null. It has a budget of its own because the failure may be the operation's signal running out.
   */
  private async forceOff(name: string): Promise<string | null> {
    try {
      await this.driver.stop(name, this.budget(`powering off headnode ${name}`));
      return null;
    } catch (err) {
      this.log?.warn({ err, headnode: name }, 'could not power off a failed headnode VM');
      return errorText(err);
    }
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

  /** A signal for driver work outside the queue's deadlines: it aborts after timeoutMs. */
  private budget(what: string): AbortSignal {
    const { timeoutMs } = this.opts;
    const controller = new AbortController();
    setTimeout(() => controller.abort(new HiltError('HeadnodeError', `${what} did not finish within ${timeoutMs} ms`)), timeoutMs).unref();
    return controller.signal;
  }

  /** Queue `op` for the headnode, after finishing an interrupted start or stop (`repaired`). */
  private chain<T>(name: string, what: string, op: (signal: AbortSignal, repaired: boolean) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new HiltError('ServiceUnavailableError', 'the service is shutting down'));
    return this.queue.run(name, async (signal) => op(signal, await this.repair(name, signal)), { what });
  }
}
