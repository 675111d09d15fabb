/**
 * The scope each route of the sandbox requires (§5 rule 10: which operation needs which scope is not shown; the
 * sandbox's mapping is in docs/spec-gaps.md, Sandbox, OAuth, "Scopes enforced").
 */
import { beforeAll, describe, expect, it } from "vitest";
import { SANDBOX_SCOPES } from "../../sandbox/index.js";
import { errorCodes, harness, tokensFor, type Harness, type Row } from "./helpers.js";

let h: Harness;
let ids: Record<"transaction" | "card" | "account", string>;
beforeAll(async () => {
  h = await harness();
  const transaction = ((await h.json("/public/v1/erp/transactions")).body.data as Row[])[0]?.id as string;
  const card = ((await h.json("/public/v1/erp/cards?status=active")).body.data as Row[])[0] as Row;
  ids = { transaction, card: card.id as string, account: card.account_external_id as string };
});

interface Route {
  readonly method: string;
  /** `{transaction}`, `{card}`, `{account}` stand for seeded ids. */
  readonly path: string;
  readonly scope: (typeof SANDBOX_SCOPES)[number];
  /** A body the route refuses (400) once past the scope check. */
  readonly body?: unknown;
}

const ROUTES: readonly Route[] = [
  { method: "GET", path: "/public/v1/erp/transactions", scope: "transactions:read" },
  { method: "GET", path: "/public/v1/erp/transactions/{transaction}", scope: "transactions:read" },
  { method: "POST", path: "/public/v1/erp/transactions/acknowledge", scope: "transactions:write", body: { transaction_ids: [] } },
  { method: "GET", path: "/public/v1/erp/bank_accounts", scope: "transactions:read" },
  { method: "GET", path: "/public/v1/erp/chart_of_accounts", scope: "transactions:read" },
  { method: "GET", path: "/public/v1/erp/tax_rates", scope: "transactions:read" },
  { method: "GET", path: "/public/v1/erp/suppliers", scope: "transactions:read" },
  { method: "GET", path: "/public/v1/erp/cards", scope: "cards:read" },
  { method: "GET", path: "/public/v1/erp/cards/{card}", scope: "cards:read" },
  { method: "GET", path: "/public/v1/erp/pool_accounts", scope: "cards:read" },
  { method: "GET", path: "/public/v1/erp/statements", scope: "wallet:read" },
  { method: "GET", path: "/public/v1/erp/statements/{account}", scope: "wallet:read" },
  { method: "GET", path: "/public/v1/erp/company/summary", scope: "wallet:read" },
  { method: "GET", path: "/public/v1/core/cards", scope: "cards:read" },
  { method: "GET", path: "/public/v1/core/cards/balance?last_four=0000", scope: "wallet:read" },
  { method: "POST", path: "/public/v1/core/cards", scope: "cards:write", body: {} },
  { method: "PUT", path: "/public/v1/core/cards/{card}", scope: "cards:write", body: {} },
  { method: "PUT", path: "/public/v1/core/cards/{card}/change_status", scope: "cards:write", body: {} },
  { method: "POST", path: "/public/v1/core/cards/{card}/update_velocity_limit", scope: "cards:write", body: { spend_limit_period: "FORTNIGHTLY" } },
  { method: "POST", path: "/public/v1/core/user_profiles/invite", scope: "users:read", body: { end_user: [] } },
];

describe("scope required per route (spec-gaps, Sandbox, OAuth)", () => {
  it.each(ROUTES)("$method $path needs $scope: 403 FORBIDDEN without it, whatever else the token holds", async ({ method, path, scope, body }) => {
    const others = await tokensFor(h.sandbox, h.companyId, SANDBOX_SCOPES.filter((s) => s !== scope).join(" "));
    const resolved = path.replace(/\{(\w+)\}/g, (_: string, name: keyof typeof ids) => ids[name]);
    const refused = await h.json(resolved, { method, body, token: others.access_token });
    expect(refused.status).toBe(403);
    expect(errorCodes(refused.body)).toEqual(["null:FORBIDDEN"]);
    expect(refused.body.message).toBe(`scope ${scope} is required`);
    // With that scope alone the route answers past the scope check (the bodies sent are refused 400, never 403).
    const only = await tokensFor(h.sandbox, h.companyId, scope);
    const passed = await h.json(resolved, { method, body, token: only.access_token });
    expect(passed.status).toBe(body === undefined ? 200 : 400);
  });
});
