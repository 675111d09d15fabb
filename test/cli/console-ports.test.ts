import { describe, expect, it } from "vitest";
import type { BridgeEvent, EventPublisher } from "../../shared/bridge/ports.js";
import { MemoryMetrics, observePublished, streamLogger } from "../../shared/cli/console-ports.js";
import { HeldTokens, SessionReply } from "../secret-kinds.js";

function sink() {
  const lines: string[] = [];
  return { lines, write: (chunk: string) => lines.push(chunk) };
}

function event(id: string): BridgeEvent {
  return {
    source: "qashio.bridge",
    detailType: "transaction.created",
    time: "2026-01-01T00:00:00Z",
    detail: { id, type: "transaction.created", schema_version: "1", tenant: "t", occurred_at: "2026-01-01T00:00:00Z", subject: { type: "transaction", id, sequence: 1 }, data: { object: {} } },
  };
}

describe("streamLogger", () => {
  it("drops messages under its level", () => {
    const out = sink();
    const logger = streamLogger(out, "warn");
    logger.info("quiet");
    logger.warn("loud", { status: 429 });
    expect(out.lines).toEqual(["warn  loud status=429\n"]);
  });

  it("never prints values of secret-looking attributes", () => {
    const out = sink();
    streamLogger(out, "debug").debug("refreshed", { refreshToken: "rt-1", client_secret: "cs", code: "c1", tenant: "acme" });
    expect(out.lines[0]).toBe("debug refreshed refreshToken=[hidden] client_secret=[hidden] code=[hidden] tenant=acme\n");
  });

  it("hides a secret-looking member of an object without a prototype too, such as a query string parsed by node:querystring", () => {
    const out = sink();
    const query = Object.assign(Object.create(null) as Record<string, unknown>, { code: "c1", state: "s1" });
    streamLogger(out, "warn").warn("callback refused", { query });
    expect(out.lines[0]).toBe('warn  callback refused query={"code":"[hidden]","state":"s1"}\n');
  });

  it("leaves out attributes without a value, as the JSON logger of the Lambdas does", () => {
    // A cycle stopped at its deadline (or by Ctrl-C) before any failed attempt has no last error to name.
    const out = sink();
    streamLogger(out, "warn").warn("provider call not sent or retried: it cannot finish before the cycle deadline; stopping", { step: "acknowledge transactions", lastError: undefined, status: undefined });
    expect(out.lines[0]).toBe("warn  provider call not sent or retried: it cannot finish before the cycle deadline; stopping step=acknowledge transactions\n");
  });

  it("writes provider text as one line of inert characters: no forged line, no terminal escape", () => {
    // A card id that fails the schema is quarantined under its raw id, and the warning names it (entityId).
    const out = sink();
    const entityId = "CA1\r\nerror cycle 7 failed\u001b]0;owned\u0007\u009b2J\u202egnp.exe";
    streamLogger(out, "warn").warn("record quarantined", { kind: "card", entityId, reasons: [entityId] });
    expect(out.lines).toHaveLength(1);
    const [text] = out.lines as [string];
    expect(text.endsWith("\n")).toBe(true);
    // eslint-disable-next-line no-control-regex -- the point: none of them may reach the terminal
    expect(text.slice(0, -1)).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    expect(text).toContain(String.raw`entityId=CA1\r\nerror cycle 7 failed\u001b]0;owned\u0007\u009b2J\u202egnp.exe`);
  });

  it("escapes control characters in the message too (an error's message a caller puts there)", () => {
    const out = sink();
    streamLogger(out, "error").error("cycle 1 failed: \u001b[2Jgone");
    expect(out.lines).toEqual([String.raw`error cycle 1 failed: \u001b[2Jgone` + "\n"]);
  });

  it("prints every level from its own up, each under its own name", () => {
    const levels = ["debug", "info", "warn", "error"] as const;
    for (const [i, level] of levels.entries()) {
      const out = sink();
      const logger = streamLogger(out, level);
      for (const each of levels) logger[each]("m");
      expect(out.lines, level).toEqual(["debug m\n", "info  m\n", "warn  m\n", "error m\n"].slice(i));
    }
  });

  it("hides passwords, authorization and salts too, and only an attribute named code, not every name holding it", () => {
    const out = sink();
    streamLogger(out, "debug").debug("call", { password: "p", Authorization: "Bearer x", piiSalt: "s", statusCode: 502, errorCode: "E1" });
    expect(out.lines).toEqual(["debug call password=[hidden] Authorization=[hidden] piiSalt=[hidden] statusCode=502 errorCode=E1\n"]);
  });

  it("hides an attribute of a secret-looking name whatever its value, an error too: its message would be written", () => {
    const out = sink();
    streamLogger(out, "warn").warn("refresh refused", { refreshToken: new Error("rt-LEAK-11 revoked"), lastError: new Error("refused") });
    expect(out.lines).toEqual(["warn  refresh refused refreshToken=[hidden] lastError=Error: refused\n"]);
  });

  it("hides a secret-looking member inside an attribute's value too, at any depth, arrays included", () => {
    const out = sink();
    const held = { refreshToken: "rt-NESTED-1", expiresAt: 5, client: { client_secret: "cs-NESTED-2", client_id: "c1" } };
    streamLogger(out, "debug").debug("saved", { held, attempts: [{ access_token: "at-NESTED-3", status: 401 }] });
    expect(out.lines).toEqual([
      'debug saved held={"refreshToken":"[hidden]","expiresAt":5,"client":{"client_secret":"[hidden]","client_id":"c1"}} attempts=[{"access_token":"[hidden]","status":401}]\n',
    ]);
  });

  it("hides a secret-looking member of a class instance, and of what a toJSON returns, as JSON.stringify writes them", () => {
    const out = sink();
    streamLogger(out, "debug").debug("held", { held: new HeldTokens("rt-LEAK-1"), nested: [{ held: new HeldTokens("rt-LEAK-1") }], session: new SessionReply("at-LEAK-2"), reply: { toJSON: () => ({ refresh_token: "rt-LEAK-3" }) } });
    expect(out.lines).toEqual([
      'debug held held={"refreshToken":"[hidden]","expiresAt":5} nested=[{"held":{"refreshToken":"[hidden]","expiresAt":5}}] session={"accessToken":"[hidden]","scope":"read"} reply={"refresh_token":"[hidden]"}\n',
    ]);
  });

  it("prints a URL quoted, as any value but a string, its password and secret-looking query and fragment parameters hidden", () => {
    const out = sink();
    const callback = new URL("https://user:pw-LEAK-4@app.example/cb?code=c-LEAK-5&state=s1&Access_Token=at-LEAK-6#id_token=it-LEAK-7");
    streamLogger(out, "warn").warn("callback", { callback, plain: new URL("https://app.example/cb?state=s1&statusCode=502") });
    expect(out.lines).toEqual([
      'warn  callback callback="https://user:[hidden]@app.example/cb?code=[hidden]&state=s1&Access_Token=[hidden]#id_token=[hidden]" plain="https://app.example/cb?state=s1&statusCode=502"\n',
    ]);
  });

  it("hides in a URL written inside a string attribute, and inside an error's message, printing the rest as it is", () => {
    const out = sink();
    streamLogger(out, "warn").warn("redirect", {
      target: "https://app.example/cb?code=c-LEAK-12&state=s1",
      lastError: new Error("GET https://user:pw-LEAK-13@app.example/x refused"),
      plain: "see https://app.example/cb?state=s1",
    });
    expect(out.lines).toEqual([
      "warn  redirect target=https://app.example/cb?code=[hidden]&state=s1 lastError=Error: GET https://user:[hidden]@app.example/x refused plain=see https://app.example/cb?state=s1\n",
    ]);
  });

  it("prints a Map, a Set and URLSearchParams as empty objects, never their entries, a secret-looking one or any other", () => {
    const out = sink();
    streamLogger(out, "info").info("held", { byName: new Map([["refreshToken", "rt-LEAK-8"]]), seen: new Set(["at-LEAK-9"]), query: new URLSearchParams("code=c-LEAK-10") });
    expect(out.lines).toEqual(["info  held byName={} seen={} query={}\n"]);
  });

  it("prints an error as its name and message, other values as JSON (null too), and no blank after a message whose attributes have no value", () => {
    const out = sink();
    const logger = streamLogger(out, "info");
    logger.info("failed", { lastError: new TypeError("fetch failed"), reasons: ["a", "b"], retry: { afterSeconds: 5 }, status: null });
    logger.info("stopped", { lastError: undefined });
    expect(out.lines).toEqual(['info  failed lastError=TypeError: fetch failed reasons=["a","b"] retry={"afterSeconds":5} status=null\n', "info  stopped\n"]);
  });
});

describe("MemoryMetrics", () => {
  it("sums by name and by event type", () => {
    const metrics = new MemoryMetrics();
    metrics.add("EventsPublished", 2, "Count", { type: "transaction.created" });
    metrics.add("EventsPublished", 1, "Count", { type: "transaction.created" });
    metrics.add("Acknowledged", 5);
    expect(metrics.get("Acknowledged")).toBe(5);
    expect(metrics.totals.get("EventsPublished:transaction.created")).toBe(3);
  });

  it("reads 0 for a metric never added", () => {
    expect(new MemoryMetrics().get("Acknowledged")).toBe(0);
  });

  it("keeps a gauge at its latest value instead of summing it", () => {
    const metrics = new MemoryMetrics();
    metrics.add("QuarantineSize", 2, "Count");
    metrics.add("QuarantineSize", 1, "Count");
    expect(metrics.get("QuarantineSize")).toBe(1);
  });

  it("keeps the transactions' backlog per pull status at its latest value, the statuses apart", () => {
    const metrics = new MemoryMetrics();
    metrics.add("TransactionsBacklog", 40, "Count", { status: "not_synced" });
    metrics.add("TransactionsBacklog", 2, "Count", { status: "outdated" });
    metrics.add("TransactionsBacklog", 25, "Count", { status: "not_synced" });
    expect(metrics.totals.get("TransactionsBacklog:not_synced")).toBe(25);
    expect(metrics.totals.get("TransactionsBacklog:outdated")).toBe(2);
  });
});

describe("observePublished", () => {
  it("hands on only the events the inner publisher accepted", async () => {
    const inner: EventPublisher = { publish: async (events) => ({ failed: [{ event: events[1] as BridgeEvent, reason: "too big" }] }) };
    const seen: string[] = [];
    const result = await observePublished(inner, (events) => seen.push(...events.map((e) => e.detail.id))).publish([event("a"), event("b"), event("c")]);
    expect(seen).toEqual(["a", "c"]);
    expect(result.failed).toHaveLength(1);
  });

  it("passes the call's options (the cycle's deadline) on to the inner publisher", async () => {
    const given: unknown[] = [];
    const inner: EventPublisher = { publish: async (_events, options) => (given.push(options), { failed: [] }) };
    await observePublished(inner, () => undefined).publish([event("a")], { deadline: 1_234 });
    expect(given).toEqual([{ deadline: 1_234 }]);
  });
});
