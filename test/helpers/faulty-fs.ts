/**
 * Faults of the file system. Makes every deletion of a file under `under` fail as a read-only folder would for a user that
 * is not root (tests may run as root, whom a folder's mode does not stop). Returns the undo.
 */
export function refusingDeletions(under: string): () => void {
  // The module object itself (an `import *` is a copy): the code under test looks `rm` up on it at each call.
  const fsp = require('node:fs/promises') as { rm: (path: string, opts?: object) => Promise<void> };
  const rm = fsp.rm;
  fsp.rm = (path, opts) => (String(path).startsWith(under) ? Promise.reject(Object.assign(new Error(`EACCES: permission denied, unlink '${path}'`), { code: 'EACCES' })) : rm(path, opts));
  return () => { fsp.rm = rm; };
}
