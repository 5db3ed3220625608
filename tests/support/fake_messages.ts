/**
 * The messages API of the tests' fake provider, under the names the tests have always used: the
 * provider simulator's (`testing/messages.ts`), re-exported, and {@linkcode withMessagesFake},
 * which runs a test against a fresh simulator and a `ProviderApiClient` pointed at it.
 *
 * @module
 */
import { ProviderApiClient } from "../../client/mod.ts";
import { installMessagesRoutes, type MessagesState, ProviderSimulator } from "../../testing/mod.ts";

export {
  generatedLines,
  installMessagesRoutes,
  messageRecord,
  type MessagesState as FakeMessagesState,
  type ScriptedStream,
  type SimulatedBatch as FakeBatch,
  textStreamFrames,
  type TextStreamOptions,
} from "../../testing/mod.ts";

/** A test body run by {@linkcode withMessagesFake}. */
export type MessagesFakeTest = (
  fake: ProviderSimulator,
  state: MessagesState,
  client: ProviderApiClient,
) => Promise<void>;

/** Options of {@linkcode withMessagesFake}. */
export interface MessagesFakeOptions {
  /** The client's `defaultMaxTokens` (default 256). */
  defaultMaxTokens?: number;
}

/**
 * Runs `test` against a fresh fake messages server and a `ProviderApiClient` pointed at it
 * (default model `model-small`, no retries), and always closes the server.
 *
 * @example
 * ```ts ignore
 * await withMessagesFake(async (_fake, state, client) => {
 *   await client.startRun({ input: "hi" });
 * });
 * ```
 */
export async function withMessagesFake(
  test: MessagesFakeTest,
  options: MessagesFakeOptions = {},
): Promise<void> {
  const fake = await ProviderSimulator.start({ bare: true });
  try {
    const state = installMessagesRoutes(fake);
    const client = new ProviderApiClient({
      apiKey: fake.apiKey,
      baseUrl: fake.baseUrl,
      defaultModel: "model-small",
      defaultMaxTokens: options.defaultMaxTokens ?? 256,
      maxRetries: 0,
    });
    await test(fake, state, client);
  } finally {
    await fake.close();
  }
}
