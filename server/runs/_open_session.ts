/**
 * Opening a run's provider session without leaving an orphan behind. A session the gateway
 * created but does not record as a run would run on at the provider (and cost) with nobody
 * knowing of it, so:
 *
 * 1. the session is created bounded by the caller's deadline, but the creation itself is not cut
 *    there: when the deadline wins, the caller is answered at once (aborted) and the session is
 *    deleted as soon as its creation is answered;
 * 2. the kickoff message, when there is one, is sent within the same deadline; when it fails, the
 *    session, which never got its task, is deleted before the failure is passed on (within at
 *    most a second past the deadline, and 5 s), so a retry leaves no orphan behind. (A session
 *    whose first events come with its creation, `initialEvents`, has no separate kickoff.)
 *
 * @module
 */
import type {
  ManagedAgentEvent,
  ManagedAgentRequestOptions,
  ProviderManagedAgentClient,
} from "../../client/mod.ts";
import { ProviderAbortError } from "../../client/errors.ts";

/** How long the deletion of a session abandoned at the deadline may take, in ms. */
const ABANDONED_DELETE_MS = 30_000;
/** The longest wait for the deletion of a session whose kickoff failed, in ms. */
const KICKOFF_CLEANUP_MS = 5_000;

/** A managed-agent session as far as the gateway reads it. */
export interface SessionView {
  /** The session id: the run id. */
  id: string;
  /** Its creation time, as the provider wrote it. */
  created_at?: unknown;
  /** The agent it runs (its `version` is recorded). */
  agent?: unknown;
}

/** Options of {@linkcode openSession}. */
export interface OpenSessionOptions {
  /** The provider client. */
  client: ProviderManagedAgentClient;
  /** What to create. */
  params: Parameters<ProviderManagedAgentClient["createSession"]>[0];
  /** The kickoff: the user messages sent once the session exists (none: no kickoff). */
  messages: ManagedAgentEvent[];
  /** Per-call options passed on to the creation and the kickoff (betas, version). */
  options?: Omit<ManagedAgentRequestOptions, "signal">;
  /** Fires at the caller's deadline (or when the caller goes). */
  signal: AbortSignal;
  /** The caller's deadline, ms since the epoch (bounds the cleanup after a failed kickoff). */
  deadline: number;
  /** The clock. */
  now: () => number;
}

/**
 * Creates a session and sends its kickoff (steps 1 and 2 of the module doc); answers the session,
 * or throws the provider client's error having deleted the session it created.
 *
 * @example
 * ```ts ignore
 * const session = await openSession({ client, params, messages, signal, deadline, now });
 * ```
 */
export async function openSession(options: OpenSessionOptions): Promise<SessionView> {
  const { client, signal } = options;
  const session = await createBounded(client, options.params, signal, options.options);
  if (options.messages.length === 0) return session;
  try {
    await client.sendEvents(session.id, options.messages, { ...options.options, signal });
  } catch (error) {
    const cleanupMs = Math.min(
      KICKOFF_CLEANUP_MS,
      Math.max(options.deadline - options.now(), 0) + 1_000,
    );
    await client.deleteSession(session.id, { signal: AbortSignal.timeout(cleanupMs) })
      .catch(() => {});
    throw error;
  }
  return session;
}

/** Step 1: the creation, answered no later than `deadline` fires. */
function createBounded(
  client: ProviderManagedAgentClient,
  params: OpenSessionOptions["params"],
  deadline: AbortSignal,
  options: OpenSessionOptions["options"],
): Promise<SessionView> {
  const creation = client.createSession(params, options) as Promise<SessionView>;
  if (deadline.aborted) return abandon(client, creation, deadline);
  return new Promise<SessionView>((resolve, reject) => {
    const onDeadline = () => {
      abandon(client, creation, deadline).catch(reject);
    };
    deadline.addEventListener("abort", onDeadline, { once: true });
    creation.then(
      (session) => {
        deadline.removeEventListener("abort", onDeadline);
        resolve(session);
      },
      (error) => {
        deadline.removeEventListener("abort", onDeadline);
        reject(error);
      },
    );
  });
}

/** Gives up on a creation at the deadline; deletes the session once the provider answers. */
function abandon(
  client: ProviderManagedAgentClient,
  creation: Promise<SessionView>,
  deadline: AbortSignal,
): Promise<never> {
  creation.then(
    (session) =>
      client.deleteSession(session.id, { signal: AbortSignal.timeout(ABANDONED_DELETE_MS) })
        .catch(() => {}),
    () => {},
  );
  return Promise.reject(new ProviderAbortError({ cause: deadline.reason }));
}
