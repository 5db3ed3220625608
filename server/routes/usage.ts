/**
 * `GET /v1/usage` (capability `session:read`): the tokens and list cost the provider reported for
 * runs, settled between `from` (inclusive) and `to` (exclusive), summed by `principal`, `agent` or
 * UTC `day` (`groupBy`, default `principal`), with the sums in all. Admins see every principal's
 * usage (or one's, with `principalId`); everyone else sees only their own, and naming another
 * principal is 403 `missingCapability`. `from` defaults to the start of the current UTC month,
 * `to` to now; the range is at most 366 days. Anything malformed, or more than
 * {@linkcode MAX_USAGE_GROUPS} groups, is 422 `invalidRequest`.
 *
 * @module
 */
import type { RequestContext } from "../context.ts";
import { InterfaceError, invalidRequest, type ValidationDetail } from "../errors.ts";
import type { RouteDefinition } from "../router.ts";
import { budgetWindow, money } from "../runs/spend.ts";
import type { RuntimeServices } from "../services.ts";
import type { UsageSum } from "../store/spend.ts";
import { parseRfc3339 } from "../time.ts";
import {
  USAGE_GROUPS,
  type UsageGroupBy,
  type UsagePage,
  type UsageTotals,
} from "../../wire/mod.ts";

/** Most groups one answer holds. */
export const MAX_USAGE_GROUPS = 1000;
/** The longest range of one query: 366 days. */
export const MAX_USAGE_RANGE_MS = 366 * 86_400_000;

const NAMES: ReadonlySet<string> = new Set(["from", "to", "groupBy", "principalId"]);
const GROUPS: ReadonlySet<string> = new Set(USAGE_GROUPS);

/** The checked query of a usage request. */
interface UsageRequest {
  from: number;
  to: number;
  groupBy: UsageGroupBy;
  principalId?: string;
}

function parseUsageQuery(query: string, now: number): UsageRequest {
  const params = new URLSearchParams(query);
  const details: ValidationDetail[] = [];
  const values: Record<string, string> = {};
  for (const name of new Set(params.keys())) {
    const all = params.getAll(name);
    if (!NAMES.has(name)) {
      details.push({
        path: name,
        message: "Unknown query parameter (known: from, to, groupBy, principalId)",
      });
    } else if (all.length > 1) details.push({ path: name, message: "Must be given once" });
    else if (all[0] === "" || all[0].length > 512) {
      details.push({ path: name, message: "Must be 1 to 512 characters" });
    } else values[name] = all[0];
  }
  const time = (name: "from" | "to", fallback: number): number => {
    if (values[name] === undefined) return fallback;
    const parsed = parseRfc3339(values[name]);
    if (parsed === null) details.push({ path: name, message: "Must be an RFC 3339 timestamp" });
    return parsed ?? fallback;
  };
  const from = time("from", budgetWindow("month", now).start!);
  const to = time("to", now);
  if (!(from < to)) details.push({ path: "to", message: "Must be after from" });
  else if (to - from > MAX_USAGE_RANGE_MS) {
    details.push({ path: "to", message: "Must be at most 366 days after from" });
  }
  const groupBy = values.groupBy ?? "principal";
  if (!GROUPS.has(groupBy)) {
    details.push({ path: "groupBy", message: `Must be one of ${USAGE_GROUPS.join(", ")}` });
  }
  if (details.length > 0) throw invalidRequest(details);
  return {
    from,
    to,
    groupBy: groupBy as UsageGroupBy,
    ...(values.principalId !== undefined ? { principalId: values.principalId } : {}),
  };
}

function totalsOf(sum: Omit<UsageSum, "key">): UsageTotals {
  return {
    inputTokens: sum.inputTokens,
    outputTokens: sum.outputTokens,
    cacheReadInputTokens: sum.cacheReadInputTokens,
    cacheCreationInputTokens: sum.cacheCreationInputTokens,
    listCost: money(sum.cost),
  };
}

/**
 * The usage route.
 *
 * @example
 * ```ts ignore
 * import { usageRoutes } from "./usage.ts";
 * const routes = usageRoutes(services);
 * ```
 */
export function usageRoutes(services: RuntimeServices): RouteDefinition[] {
  async function usage(context: RequestContext): Promise<Response> {
    const caller = context.principal!;
    const request = parseUsageQuery(context.query, context.receivedAt);
    let principalId = request.principalId;
    if (!caller.capabilities.includes("authority:admin")) {
      if (principalId !== undefined && principalId !== caller.principalId) {
        throw new InterfaceError(
          "missingCapability",
          "Reading another principal's usage needs authority:admin",
          { extra: { requiredCapability: "authority:admin" } },
        );
      }
      principalId = caller.principalId;
    }
    const from = new Date(request.from).toISOString();
    const to = new Date(request.to).toISOString();
    let sums: UsageSum[];
    try {
      sums = await services.store.spend.usage({
        from,
        to,
        groupBy: request.groupBy,
        maxGroups: MAX_USAGE_GROUPS,
        ...(principalId !== undefined ? { principalId } : {}),
      });
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      throw invalidRequest([{
        path: "groupBy",
        message: `More than ${MAX_USAGE_GROUPS} groups: narrow the range or name a principal`,
      }]);
    }
    const total = {
      cost: 0n,
      inputTokens: 0,
      outputTokens: 0,
      cacheReadInputTokens: 0,
      cacheCreationInputTokens: 0,
    };
    for (const sum of sums) {
      total.cost += sum.cost;
      total.inputTokens += sum.inputTokens;
      total.outputTokens += sum.outputTokens;
      total.cacheReadInputTokens += sum.cacheReadInputTokens;
      total.cacheCreationInputTokens += sum.cacheCreationInputTokens;
    }
    const page: UsagePage = {
      from,
      to,
      groupBy: request.groupBy,
      groups: sums.map((sum) => ({ key: sum.key, ...totalsOf(sum) })),
      total: totalsOf(total),
    };
    return context.json(JSON.stringify(page));
  }

  return [{
    method: "GET",
    path: "/v1/usage",
    kind: "shared",
    capability: "session:read",
    handle: usage,
  }];
}
