/**
 * The store contract suite against PostgreSQL: one fresh database for this file (in the CI
 * cluster, or a throwaway cluster started here), one random namespace per case.
 */
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import {
  createTestDatabase,
  ignorePostgresTests,
  skipNote,
  type TestDatabase,
} from "../support/postgres.ts";
import { runStoreContract } from "./contract.ts";

let database: Promise<TestDatabase> | undefined;

runStoreContract(
  `postgres${skipNote()}`,
  async (namespace) => {
    database ??= createTestDatabase();
    return await openPostgresStore({ url: (await database).url, namespace });
  },
  { ignore: ignorePostgresTests() },
);

Deno.test({
  name: `postgres store: drop the test database${skipNote()}`,
  ignore: ignorePostgresTests(),
  async fn() {
    await (await database)?.close();
  },
});
