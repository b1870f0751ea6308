/**
 * One process per LMDB data folder. LMDB lets several processes open one environment, so a
 * second hilt started on the folder of a running one would serve with read models, actors and
 * VLAN reservations of its own over the same store: each would acknowledge changes the other
 * never sees. While it runs, the service listens on an abstract Unix socket named after the
 * folder's device and inode (the same folder under any path); a second bind fails. The kernel
 * drops the name when its process dies, kill -9 included, so nothing stale is left to clean up.
 */
import { statSync } from 'node:fs';
import { createServer } from 'node:net';

/** Hold the folder; resolves with its release, or rejects saying that another process holds it. */
export function lockFolder(dir: string): Promise<() => Promise<void>> {
  const st = statSync(dir, { bigint: true });
  const server = createServer((socket) => socket.destroy());
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'EADDRINUSE'
        ? new Error(`the data folder ${dir} is in use by another hilt process: one process per folder (stop that one first, or give this one its own HILT_DATA_DIR)`)
        : err);
    });
    server.listen(`\0hilt-data-folder:${st.dev}:${st.ino}`, () => {
      // The HTTP listener keeps the process alive, not the lock.
      server.unref();
      resolve(() => new Promise<void>((r) => server.close(() => r())));
    });
  });
}
