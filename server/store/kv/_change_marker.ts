/**
 * A synchronous "has anything been committed since?" check for a Deno KV file, read from the
 * header of SQLite's WAL index (the `-shm` file beside the KV file). The authority leases part
 * (`_leases.ts`) reads it every 10 ms to wake a lease holder or a waiting revocation when another
 * process (or worker) committed to the file: Deno KV's own `watch` does not cross processes.
 *
 * Deno KV keeps its file in SQLite's WAL mode. Every commit, by any connection of any process,
 * rewrites the WAL-index header and increments its `iChange` counter (SQLite's documented WAL
 * file format, "walformat.html": two copies of a 48-byte header at offset 0, version 3007000).
 * So a changed counter says that some process committed something since it was last read, and an
 * unchanged one that nothing was committed.
 *
 * Why this read: a 96-byte read at offset 0 takes about 0.9 µs and holds no lock (SQLite's own
 * `PRAGMA data_version` says the same through a second connection, but takes two `fcntl` locks
 * per call), and `Deno.FsFile`'s `seekSync` and `readSync` allocate 3 bytes a call where
 * `node:fs` `readSync` allocates 120 to 600 checking its arguments. (Both mattered when every
 * authenticated request read the marker; leases took it off the request path.)
 *
 * Anything unexpected (no `-shm` file, another format version, the two copies differing while a
 * commit is being published, a read error) gives null. A commit counts once SQLite has published
 * its header, which happens before the commit returns to the process that made it.
 *
 * @module
 */
/** The change marker of one KV file. */
export interface ChangeMarker {
  /** The current marker, or null when it cannot be read. */
  read(): number | null;
  /** Closes the file. */
  close(): void;
}

/** WAL-index format version SQLite writes in both header copies. */
const WAL_INDEX_VERSION = 3007000;
/** Two copies of the 48-byte header. */
const HEADER_BYTES = 96;
/** The header's integers are in the host's byte order (it is shared memory). */
const LITTLE_ENDIAN = new Uint16Array(new Uint8Array([1, 0]).buffer)[0] === 1;

/**
 * Opens the change marker of the KV file at `path`, or returns null when there is no file to
 * watch (`:memory:`, a remote KV URL): the leases part then reads its keys on a slower timer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openChangeMarker } from "./_change_marker.ts";
 * const path = await Deno.makeTempFile({ suffix: ".kv" });
 * const kv = await Deno.openKv(path);
 * await kv.set(["k"], 0);
 * const marker = openChangeMarker(path)!;
 * const before = marker.read();
 * assert.equal(typeof before, "number");
 * assert.equal(marker.read(), before);
 * await kv.set(["k"], 1);
 * assert.notEqual(marker.read(), before);
 * marker.close();
 * kv.close();
 * assert.equal(openChangeMarker(":memory:"), null);
 * ```
 */
export function openChangeMarker(path: string): ChangeMarker | null {
  if (path === ":memory:" || path.includes("://")) return null;
  const shm = `${path}-shm`;
  const header = new Uint8Array(HEADER_BYTES);
  const view = new DataView(header.buffer);
  let file: Deno.FsFile | null = null;
  let closed = false;
  return {
    read(): number | null {
      if (closed) return null;
      try {
        // Opened on first use: the `-shm` file appears with the KV store's first access.
        file ??= Deno.openSync(shm, { read: true });
        file.seekSync(0, Deno.SeekMode.Start);
        if (file.readSync(header) !== HEADER_BYTES) return null;
      } catch {
        return null;
      }
      // A known version, initialized, and both copies equal (else a commit is being published).
      if (view.getUint32(0, LITTLE_ENDIAN) !== WAL_INDEX_VERSION || header[12] !== 1) return null;
      for (let i = 0; i < 48; i++) {
        if (header[i] !== header[48 + i]) return null;
      }
      return view.getUint32(8, LITTLE_ENDIAN);
    },
    close(): void {
      if (closed) return;
      closed = true;
      file?.close();
    },
  };
}
