/**
 * Log entries too long for their commit (`_events.ts`, `_packs.ts`). Deno KV holds at most 800 KiB
 * of values in one atomic commit, and an append wrote all of an entry's parts in the commit that
 * numbers it: an entry longer than that (a 795 KiB message, a tool input or a provider event as
 * long) failed every append of its run, and the run's tail retried it forever while nothing after
 * it reached either log.
 *
 * So the parts of an entry cut in more than `INLINE_PARTS` (`_append_groups.ts`) after its first
 * are written first, in commits of their own, under a key no reader lists:
 *
 * - `["run-spill", runId, token, part]` → the part's text (parts 1…), `token` the first 128 bits
 *   of the SHA-256 of the entry's whole text, base64url;
 *
 * and the entry's first part, in the commit that numbers it, names the token (`spill`). Until that
 * commit lands nothing refers to the parts, so an append that fails after writing them (a moved
 * head, a lost lease, a crash) leaves parts nobody reads. The token names the text, not the
 * attempt: an append tried again writes the same text under the same keys, however often its
 * commit fails, and two replicas appending the same entry write the same values. (A random token
 * left a new copy, about 550 KB for a 300,000-character entry, at each try of an append whose
 * commit kept failing.) A run entry renumbered by a retry is another text (its seq is in it), so
 * that copy stays behind; the run's purge deletes every part with its logs. A reader joins an
 * entry's parts only when all are there ({@linkcode spillReader}); else its page ends before the
 * entry, as for an entry a purge tore.
 *
 * @module
 */
import { sha256, toBase64Url } from "../../digest.ts";
import type { KvCommits } from "./_commit.ts";
import type { Spill, Spilled } from "./_packs.ts";

/**
 * Parts per commit of their own: at most 48 KiB each (24,000 characters, two bytes each at
 * most), so twelve stay inside KV's 800 KiB a commit with their keys.
 */
const PARTS_PER_COMMIT = 12;

/**
 * The parts one append takes out of its commits, written before the commit that refers to them
 * ({@linkcode Spills.write}). One per append: its attempts share what was written.
 */
export class Spills {
  readonly #commits: KvCommits;
  readonly #prefixOf: (token: string) => Deno.KvKey;
  /** The tokens of the texts this append wrote out. */
  readonly #written = new Set<string>();
  /** Taken out and not written yet, by token. */
  readonly #pending = new Map<string, readonly string[]>();

  /** Writes through `commits`, each part under `[...prefixOf(token), part]`. */
  constructor(commits: KvCommits, prefixOf: (token: string) => Deno.KvKey) {
    this.#commits = commits;
    this.#prefixOf = prefixOf;
  }

  /** The {@linkcode Spill} of the rows (`runRows`, `nativeRows`). */
  readonly spill: Spill = (json, parts) => {
    const token = toBase64Url(sha256(json).subarray(0, 16));
    if (!this.#written.has(token)) this.#pending.set(token, parts);
    return token;
  };

  /**
   * Writes the parts taken out and not written yet (parts 1… of each entry). An entry counts as
   * written once all its parts are: after a failure the next call writes it again (the same keys
   * and values), so no commit ever refers to parts that are not all there.
   */
  async write(): Promise<void> {
    for (const [token, parts] of this.#pending) {
      for (let from = 1; from < parts.length; from += PARTS_PER_COMMIT) {
        const operation = this.#commits.kv.atomic();
        for (let part = from; part < Math.min(from + PARTS_PER_COMMIT, parts.length); part++) {
          operation.set([...this.#prefixOf(token), part], parts[part]);
        }
        await this.#commits.commit(operation);
      }
      this.#pending.delete(token);
      this.#written.add(token);
    }
  }
}

/**
 * The {@linkcode Spilled} of the readers: the parts under `prefixOf(token)`, when they are parts
 * 1 to `parts - 1`, all of them.
 */
export function spillReader(
  kv: Deno.Kv,
  prefixOf: (token: string) => Deno.KvKey,
): Spilled {
  return async (token, parts) => {
    const rest: string[] = [];
    for await (const row of kv.list<string>({ prefix: prefixOf(token) })) {
      const part = row.key[row.key.length - 1];
      if (part !== rest.length + 1 || typeof row.value !== "string") return null;
      rest.push(row.value);
    }
    return rest.length === parts - 1 ? rest : null;
  };
}
