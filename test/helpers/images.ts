/**
 * Base images for headnode tests. No downloads are possible here, so a base image is an empty
 * qcow2 disk: the VM runs SeaBIOS with nothing to boot, which is enough for VNC and QMP.
 */
import { execFile } from 'node:child_process';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';

/** Create DIR/NAME.qcow2 (64 MiB, empty) and return its absolute path. Fails loudly without qemu-img. */
export async function makeBaseImage(dir: string, name = 'base-headnode', size = '64M'): Promise<string> {
  await fsp.mkdir(dir, { recursive: true });
  const file = path.resolve(dir, `${name}.qcow2`);
  await new Promise<void>((resolve, reject) => {
    execFile('qemu-img', ['create', '-q', '-f', 'qcow2', file, size], { timeout: 15_000, killSignal: 'SIGKILL' }, (err, _o, stderr) => {
      if (!err) return resolve();
      const why =
        (err as NodeJS.ErrnoException).code === 'ENOENT'
          ? 'qemu-img not found: QEMU is not installed (apt-get install qemu-utils)'
          : String(stderr).trim() || err.message;
      reject(new Error(`making base image ${file}: ${why}`));
    });
  });
  return file;
}
