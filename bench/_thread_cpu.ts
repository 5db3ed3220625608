/**
 * CPU time of this process by thread, read from Linux's `/proc/self/task/<tid>/schedstat`: for
 * each thread the nanoseconds it ran on a core and the nanoseconds it waited, runnable, for one.
 * The benchmarks read it before and after a measured span and report the difference per unit of
 * work (`bench/events_bench.ts`: per frame), so where the CPU of a frame goes is measured by the
 * bench itself rather than by an instrumented copy of it.
 *
 * Threads are grouped by what they are in a Deno process: the JavaScript thread (the process's
 * first thread, whose id is the process id), Deno KV's SQLite thread (`sw-…`), V8's helper
 * threads (`V8 …`: compilation, garbage collection), and the rest (Tokio's I/O and blocking
 * threads). Threads that ended between two readings take their time with them; the groups'
 * threads live as long as the process in the benchmarks' children.
 *
 * @module
 */

/** The groups threads are counted in. */
export const THREAD_GROUPS = ["js", "kv", "v8", "other"] as const;

/** A group of threads. */
export type ThreadGroup = typeof THREAD_GROUPS[number];

/** Nanoseconds a group of threads ran on a core and waited for one. */
export interface ThreadTime {
  /** Nanoseconds on a core. */
  ran: number;
  /** Nanoseconds runnable but waiting for a core. */
  waited: number;
}

/** Time per group of threads. */
export type ThreadCpu = Record<ThreadGroup, ThreadTime>;

/** Which group a thread belongs to, from its id and its name (`comm`). */
function groupOf(tid: number, name: string): ThreadGroup {
  if (tid === Deno.pid) return "js";
  if (name.startsWith("sw-")) return "kv";
  if (name.startsWith("V8 ")) return "v8";
  return "other";
}

/** Empty time per group. */
function emptyCpu(): ThreadCpu {
  return {
    js: { ran: 0, waited: 0 },
    kv: { ran: 0, waited: 0 },
    v8: { ran: 0, waited: 0 },
    other: { ran: 0, waited: 0 },
  };
}

/** Thread names, read once per thread (a thread keeps its name in these processes). */
const names = new Map<number, string>();

/**
 * This process's CPU time so far, by group of threads (zeros where `/proc` is not there).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readThreadCpu } from "./_thread_cpu.ts";
 * const cpu = readThreadCpu();
 * if (Deno.build.os === "linux") assert.ok(cpu.js.ran > 0);
 * ```
 */
export function readThreadCpu(): ThreadCpu {
  const cpu = emptyCpu();
  let entries: Iterable<Deno.DirEntry>;
  try {
    entries = Deno.readDirSync("/proc/self/task");
  } catch {
    return cpu;
  }
  for (const entry of entries) {
    const tid = Number(entry.name);
    try {
      let name = names.get(tid);
      if (name === undefined) {
        name = Deno.readTextFileSync(`/proc/self/task/${tid}/comm`).trim();
        names.set(tid, name);
      }
      const [ran, waited] = Deno.readTextFileSync(`/proc/self/task/${tid}/schedstat`)
        .split(" ").map(Number);
      const group = cpu[groupOf(tid, name)];
      group.ran += ran;
      group.waited += waited;
    } catch {
      // The thread ended while we read.
    }
  }
  return cpu;
}

/**
 * `after - before` per unit, in milliseconds (for example per frame: `units` frames).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { cpuPer } from "./_thread_cpu.ts";
 * const zero = { ran: 0, waited: 0 };
 * const before = { js: zero, kv: zero, v8: zero, other: zero };
 * const after = { ...before, js: { ran: 3e6, waited: 1e6 } };
 * assert.deepEqual(cpuPer(before, after, 2).js, { ran: 1.5, waited: 0.5 });
 * ```
 */
export function cpuPer(before: ThreadCpu, after: ThreadCpu, units: number): ThreadCpu {
  const out = emptyCpu();
  for (const group of THREAD_GROUPS) {
    out[group].ran = (after[group].ran - before[group].ran) / 1e6 / units;
    out[group].waited = (after[group].waited - before[group].waited) / 1e6 / units;
  }
  return out;
}
