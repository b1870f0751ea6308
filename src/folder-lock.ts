/**
 * One process per LMDB data folder. LMDB lets several processes open one environment, so a
 * second hilt started on the folder of a running one would serve with read models, actors and
 * VLAN reservations of its own over the same store: each would acknowledge changes the other
 * never sees. While it runs, the service listens on two Unix sockets:
 * - an abstract one named after the folder's device and inode (the same folder under any path),
 *   whose second bind fails at once; the kernel drops the name when its process dies, kill -9
 *   included. Abstract names are per network namespace, though: a process in another one (a
 *   container sharing the folder) would not see it. So also
 * - one in the folder itself (`.hilt.sock`), which every namespace that sees the folder sees. A
 *   process killed leaves its file behind; a start that finds it tries to connect: refused means
 *   no process listens (the file is removed and bound again), answered means one runs.
 */
import { closeSync, existsSync, openSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { createConnection, createServer, Server } from 'node:net';

const inUse = (dir: string) => new Error(`the data folder ${dir} is in use by another hilt process: one process per folder (stop that one first, or give this one its own HILT_DATA_DIR)`);

/** The name of the socket in the folder. */
export const FOLDER_SOCKET = '.hilt.sock';

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (err: Error) => reject(err);
    server.once('error', failed);
    server.listen(path, () => {
      server.off('error', failed);
      // The HTTP listener keeps the process alive, not the lock.
      server.unref();
      resolve();
    });
  });
}

const close = (server: Server) => new Promise<void>((r) => server.close(() => r()));

/** Does a process answer on the Unix socket at `path`? */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code !== 'ECONNREFUSED' && err.code !== 'ENOENT'));
  });
}

/** Hold the folder; resolves with its release, or rejects saying that another process holds it. */
export async function lockFolder(dir: string): Promise<() => Promise<void>> {
  const st = statSync(dir, { bigint: true });
  const abstract = createServer((socket) => socket.destroy());
  try {
    await listen(abstract, `\0hilt-data-folder:${st.dev}:${st.ino}`);
  } catch (err) {
    throw (err as NodeJS.ErrnoException).code === 'EADDRINUSE' ? inUse(dir) : err;
  }
  // The folder's socket is named through an open descriptor of the folder: a Unix socket's path
  // is at most 107 bytes, a data folder's path may be longer.
  let fd: number | undefined;
  const inFolder = createServer((socket) => socket.destroy());
  try {
    fd = openSync(dir, 'r');
    const path = existsSync('/proc/self/fd') ? `/proc/self/fd/${fd}/${FOLDER_SOCKET}` : join(dir, FOLDER_SOCKET);
    try {
      await listen(inFolder, path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      if (await answers(path)) throw inUse(dir);
      // Left by a process that died: nobody listens on it.
      unlinkSync(path);
      await listen(inFolder, path);
    }
  } catch (err) {
    await close(abstract);
    if (fd !== undefined) closeSync(fd);
    throw err;
  }
  return async () => {
    // Closing removes the folder's socket file, through the descriptor still open.
    await close(inFolder);
    closeSync(fd!);
    await close(abstract);
  };
}
