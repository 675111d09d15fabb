/**
 * README's "Using the client" example, run as a reader would paste it: against a scripted provider, with the client's
 * own classes, so an option, method or body the example names and the code does not take fails here.
 */
import { readFileSync } from "node:fs";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import * as qashio from "../../shared/qashio/index.js";
import type { StoredTokens, TokenStore } from "../../shared/qashio/index.js";
import { captureLogger, ok, pagination, routedFetch, scriptedFetch } from "./helpers.js";
import { TRANSACTION_ID, transactionFixture } from "./schemas/fixtures.js";

const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const section = /^## Using the client\n([^]*?)^## /m.exec(README)?.[1] ?? "";
const example = /```ts\n([^]*?)```/.exec(section)?.[1] ?? "";
const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (...args: string[]) => (...values: unknown[]) => Promise<void>;

/** The example's import line: the names it takes from the client's index. */
function importedNames(code: string): string[] {
  const names = /^import \{([^}]*)\} from "\.\/shared\/qashio\/index\.js";$/m.exec(code)?.[1] ?? "";
  return names.split(",").map((name) => name.trim()).filter(Boolean);
}

/** Runs the example's body with `bindings` as the variables a reader's code around it holds. */
async function runExample(bindings: Record<string, unknown>): Promise<void> {
  const body = example.replace(/^import .*$/m, "");
  const js = ts.transpileModule(body, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext } }).outputText;
  await new AsyncFunction(...Object.keys(bindings), js)(...Object.values(bindings));
}

describe("README's Using the client example", () => {
  it("imports only what the client's index exports", () => {
    const names = importedNames(example);
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((name) => !(name in qashio))).toEqual([]);
  });

  it("walks, posts and acknowledges with the body the comment gives, and logs no raw enum value a provider sent", async () => {
    const approval = "approved by ann.holder@example.com"; // an unlisted enum value holding free text, personal data
    const fetch = scriptedFetch(
      ok([transactionFixture({ approval_status: approval })], { pagination: pagination(1, 1) }),
      ok({ message: "acknowledged" }),
    );
    const tokens: StoredTokens = { accessToken: "access-1", accessTokenExpiresAt: Date.now() + 3_600_000, refreshToken: "refresh-1" };
    const store: TokenStore = { load: () => Promise.resolve(tokens), save: () => Promise.resolve() };
    const logger = captureLogger();
    const posted: string[] = [];
    const unknownEnums = new Set<string>();
    const bindings: Record<string, unknown> = {
      ...Object.fromEntries(importedNames(example).map((name) => [name, qashio[name as keyof typeof qashio]])),
      // The client as the example builds it, with the scripted provider in place of the network.
      QashioClient: class extends qashio.QashioClient {
        constructor(options: qashio.QashioClientOptions) {
          super({ ...options, fetch });
        }
      },
      process: { env: { QASHIO_TARGET: "https://api.example.test" } },
      clientId: "client-1",
      clientSecret: "secret-1",
      store,
      lock: undefined,
      logger,
      unknownEnums,
      post: (tx: { id: string }) => {
        posted.push(tx.id);
        return Promise.resolve();
      },
      postedIds: posted,
    };

    await runExample(bindings);

    expect(posted).toEqual([TRANSACTION_ID]);
    const acknowledge = fetch.calls.at(-1);
    expect(acknowledge?.url.href).toBe("https://api.example.test/public/v1/erp/transactions/acknowledge");
    const bodyKey = /body \{"(\w+)": \[\.\.\.\]\}/.exec(example)?.[1] ?? "";
    expect(acknowledge?.body).toEqual({ [bodyKey]: [TRANSACTION_ID] });
    // The drift reached both the client's logger and the example's onDrift, and the logs hold no raw value.
    expect(logger.lines.length).toBeGreaterThan(0);
    expect(unknownEnums.size).toBe(1);
    expect(logger.text()).not.toContain("ann.holder");
  });
});

describe("README's Using the client, on pages", () => {
  const CORE_CARDS_PAGE = { cards: [], page_info: { current_page: 1, per_page: 20, total_entries: 0, total_pages: 1, next_page: null, previous_page: null, offset: 0 } };

  it("names where each list* method's page tells its position, beside data and invalid", async () => {
    const pages = /^- \*\*Pages\*\*: `list\*` return one page \(([^]*?)\); `iterate\*`/m.exec(section)?.[1] ?? "";
    expect(pages).toContain("`data`");
    expect(pages).toContain("`invalid`");
    // The provider's two list envelopes: core cards under data.cards with page_info, every other list under data.
    const fetch = routedFetch((call) => (call.url.pathname.endsWith("/core/cards") ? ok(CORE_CARDS_PAGE) : ok([], { pagination: pagination(1, 1) })));
    const client = new qashio.QashioClient({ baseUrl: "https://api.example.test", tokenProvider: new qashio.StaticTokenProvider("access-1"), fetch });
    const prototype = qashio.QashioClient.prototype as unknown as Record<string, (...args: unknown[]) => Promise<object>>;
    // The public lists take optional arguments only; the private page reader they share takes its path first.
    const lists = Object.getOwnPropertyNames(prototype).filter((name) => /^list[A-Z]/.test(name) && prototype[name]!.length === 0);
    expect(lists.length).toBeGreaterThan(5);
    for (const name of lists) {
      const page = (await prototype[name]!.call(client)) as Record<string, unknown>;
      const position = Object.keys(page).filter((key) => !["data", "invalid", "requestId"].includes(key));
      expect(position.length, name).toBeGreaterThan(0);
      for (const key of position) expect(pages, `${name}: ${key}`).toContain(`\`${key}\``);
    }
  });
});

describe("README's Using the client, on errors and retries", () => {
  const flat = section.replace(/\s+/g, " ");

  it("lists, as typed errors, classes the client exports, each a QashioError carrying status, errors and requestId", () => {
    const listed = /\*\*Errors are typed\*\* \(([^)]*)\)/.exec(flat)?.[1] ?? "";
    const names = [...listed.matchAll(/`(\w+)`/g)].map((m) => m[1] as string);
    expect(names.length).toBeGreaterThan(5);
    for (const name of names) {
      const ErrorClass = (qashio as Record<string, unknown>)[name] as (new (message: string, context: qashio.QashioErrorContext) => qashio.QashioError) | undefined;
      expect(ErrorClass, name).toBeTypeOf("function");
      const error = new ErrorClass!("x", { status: 400, errors: [{ field: "page", code: "invalid", message: "" }], requestId: "r-1" });
      expect(error, name).toBeInstanceOf(qashio.QashioError);
      expect({ name: error.name, status: error.status, codes: error.errors.map((e) => e.code), requestId: error.requestId }).toEqual({ name, status: 400, codes: ["invalid"], requestId: "r-1" });
    }
  });

  it("gives the client's default attempts, longest Retry-After honoured and timeout per attempt", () => {
    expect(flat).toContain(`**Retries** (${qashio.DEFAULT_RETRY.maxAttempts} attempts in total,`);
    expect(flat).toContain(`\`Retry-After\` honoured on 429 and 5xx up to ${qashio.DEFAULT_RETRY.maxRetryAfterMs / 1000} s;`);
    expect(flat).toContain(`(${qashio.DEFAULT_TIMEOUT_MS / 1000} s per attempt;`);
  });
});
