/**
 * README's "Architecture" and "The engine" held to the code: the numbers, names and code paths they give a reader
 * (the diagram's labels, the metric list, the entry points, the transaction cycle), read from the text and compared
 * with the code's exported constants or its behaviour. The behaviour tests count in the constants; these read what the
 * README states.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_METRICS_NAMESPACE } from "../shared/aws/config.js";
import { MAX_ENTRIES_PER_CALL } from "../shared/aws/event-publisher.js";
import { MAX_ENTRY_BYTES } from "../shared/aws/event-size.js";
import { cardModeOf, type PollEvent } from "../shared/aws/poll-event.js";
import { ProviderSecretSchema, type ProviderSecret } from "../shared/aws/provider-secret.js";
import { credentialsFingerprint } from "../shared/aws/runtime.js";
import * as bridge from "../shared/bridge/index.js";
import { eventId, type EventIdentity } from "../shared/bridge/hash.js";
import { DEFAULT_PAGE_SIZE } from "../shared/bridge/deps.js";
import { PII_MODES } from "../shared/bridge/pii.js";
import { countProviderRetries } from "../shared/bridge/root-metrics.js";
import { NOT_SYNCED_BUDGET_SHARE, pollTransactions } from "../shared/bridge/transactions.js";
import { DEFAULT_RETRY } from "../shared/qashio/http.js";
import { TOKEN_PATH, VALIDATE_PATH } from "../shared/qashio/auth/oauth.js";
import { PATHS } from "../shared/qashio/client.js";
import { METRIC_NAMESPACE } from "../infra/constructs/bridge-metrics.js";
import { makeRig } from "./bridge/fakes.js";
import { importGraph, loadedWith } from "./import-graph.js";
import { docSection, docText, firstTextsSaid, numbersSaid, quotedNames, textBetween, textsSaid } from "./doc-text.js";
import { ROOT, expectCitationsHold, specGapsSection } from "./spec-gaps-section.js";

/** "## Architecture" with its "### The engine", line breaks read as spaces. */
const ARCHITECTURE = docSection(docText("README.md"), "Architecture");
const ENGINE = ARCHITECTURE.slice(ARCHITECTURE.indexOf(" ### The engine "));

const source = (path: string): string => readFileSync(join(ROOT, path), "utf8");

describe("README, Architecture: the runtime's parts", () => {
  it("has the runtime rebuilt for a change of exactly the secret's members it names, not for a new refresh token", () => {
    const said = firstTextsSaid(ARCHITECTURE, /into the engine once \(again when the secret's (.+?) change\)/)[0] ?? "";
    // The words the README uses for the secret's members (the spec's "client credentials" are its id and secret).
    const members: Readonly<Record<string, readonly (keyof ProviderSecret)[]>> = {
      "client credentials": ["client_id", "client_secret"],
      "PII salt": ["pii_salt"],
      "refresh token": ["refresh_token"],
    };
    const named = said.split(/, | or | and /).flatMap((words) => {
      expect(members, `a member of the secret: ${words}`).toHaveProperty([words]);
      return members[words] ?? [];
    });
    const secret: ProviderSecret = { client_id: "cid", client_secret: "cs", refresh_token: "rt", pii_salt: "salt-0123456789abcdef" };
    const rebuilding = Object.keys(ProviderSecretSchema.shape).filter(
      (member) => credentialsFingerprint({ ...secret, [member]: `${secret[member as keyof ProviderSecret]}-changed` }) !== credentialsFingerprint(secret),
    );
    expect(named.sort()).toEqual(rebuilding.sort());
  });

  it("names in the diagram's provider box every path the functions call: the lists, the acknowledge, the refresh and the rotation's validate", () => {
    const box = firstTextsSaid(ARCHITECTURE, /P\[\("Qashio API<br\/>([^"]+)"\)\]/)[0] ?? "";
    const patterns = box.split(/<br\/>| · /);
    const covered = (path: string): boolean => patterns.some((p) => (p.endsWith("/*") ? path.startsWith(p.slice(0, -1)) : path === p));
    const called = [PATHS.transactions, PATHS.acknowledge, PATHS.erpCards, TOKEN_PATH, VALIDATE_PATH];
    expect(called.filter((path) => !covered(path))).toEqual([]);
  });

  it("names in the diagram's secret every member of the provider secret", () => {
    const box = firstTextsSaid(ARCHITECTURE, /SM\[\("Secrets Manager<br\/>([^"]+)"\)\]/)[0]?.toLowerCase() ?? "";
    for (const member of Object.keys(ProviderSecretSchema.shape)) {
      for (const word of member.split("_")) expect(box, member).toContain(word);
    }
  });

  it("names in the diagram the three functions, one handler file each, of three lines that call the handler factories", () => {
    const labels = textsSaid(ARCHITECTURE, /\b(?:PT|PC|RT)\["([\w-]+)"\]/g).map(([label = ""]) => label);
    const files = readdirSync(join(ROOT, "functions")).filter((name) => name.endsWith(".ts"));
    expect(labels.map((label) => `${label}.ts`).sort()).toEqual(files.sort());
    const [[lines = 0] = []] = numbersSaid(ARCHITECTURE, /handlers `functions\/\*\.ts` \((\w+) lines each\) → factories `(?:[\w/.-]+)`/);
    const factories = firstTextsSaid(ARCHITECTURE, /\) → factories `([\w/.-]+)`/)[0] ?? "";
    for (const file of files) {
      const text = source(join("functions", file));
      expect(text.split("\n").filter((line) => line.trim() !== "").length, file).toBe(lines);
      expect(text, file).toContain(`"../${factories.replace(/\.ts$/, ".js")}"`);
    }
  });

  it("bounds PutEvents as the diagram says", () => {
    const [[entries = 0, kb = 0] = []] = numbersSaid(ARCHITECTURE, /PutEvents \(≤(\d+) entries, < (\d+) KB\)/);
    expect(entries).toBe(MAX_ENTRIES_PER_CALL);
    // "less than" the limit: the largest request taken is one byte under it.
    expect(MAX_ENTRY_BYTES + 1).toBe(kb * 1024);
  });

  it("cites code that exists, holding each name it cites there, and a design section that exists", () => {
    expect(expectCitationsHold(ARCHITECTURE)).toBeGreaterThanOrEqual(5);
    const [section = ""] = firstTextsSaid(ARCHITECTURE, /Design choices: docs\/spec-gaps\.md, "([^"]+)"/);
    expect(specGapsSection(section).length).toBeGreaterThan(100);
    expect(existsSync(join(ROOT, firstTextsSaid(ENGINE, /Event catalog: (docs\/[\w-]+\.md)/)[0] ?? ""))).toBe(true);
  });

  it("names as adapters files of shared/aws that implement the ports the engine section lists", () => {
    const adapters = textBetween(ARCHITECTURE, "→ adapters (", ") implementing the ports");
    const ports = new Set(quotedNames(textBetween(ENGINE, "`ports.ts`:", ";")));
    const files = quotedNames(adapters);
    expect(files.length).toBeGreaterThanOrEqual(5);
    for (const file of files) {
      const implemented = [...source(join("shared/aws", file)).matchAll(/class \w+ implements (\w+)/g)].map((m) => m[1] ?? "");
      expect(implemented.filter((port) => ports.has(port)), file).not.toEqual([]);
    }
  });
});

describe("README, Architecture: observability", () => {
  /** The metric list: "Name" or "Name by what" entries. */
  const listed = textBetween(ARCHITECTURE, "EMF metrics in namespace", "), X-Ray traces")
    .replace(/^[^(]*\(/, "")
    .split(",")
    .map((entry) => entry.trim());
  const byDimension = new Map(listed.flatMap((entry) => (/^(\w+) by (.+)$/.exec(entry) ? [[entry.split(" ")[0] ?? "", entry.replace(/^\w+ by /, "")]] : [])));

  it("gives the namespace the functions and the stack use", () => {
    const [namespace] = firstTextsSaid(ARCHITECTURE, /EMF metrics in namespace `(\w+)`/);
    expect(namespace).toBe(DEFAULT_METRICS_NAMESPACE);
    expect(namespace).toBe(METRIC_NAMESPACE);
  });

  it("lists only names of metrics the runtime emits", () => {
    const union = /export type MetricName =([^;]*);/.exec(source("shared/bridge/ports.ts"))?.[1] ?? "";
    const names = new Set([...union.matchAll(/"(\w+)"/g)].map((m) => m[1]));
    expect(names.size).toBeGreaterThan(15);
    expect(listed.map((entry) => entry.split(" ")[0]).filter((name) => !names.has(name))).toEqual([]);
  });

  it("says by what a metric is split exactly for the metrics the engine gives a dimension, naming the dimension", async () => {
    const rig = makeRig();
    const changed = rig.provider.addTransaction();
    await pollTransactions(rig.deps);
    rig.provider.changeTransaction(changed.id, { memo: "corrected" });
    rig.provider.addTransaction();
    await pollTransactions(rig.deps);
    countProviderRetries(rig.deps.metrics)({ status: 503, statusClass: "5xx", method: "GET", path: "/x", error: "ServerError", attempt: 1, delayMs: 0 });
    const dimensioned = new Map<string, string[]>();
    for (const point of rig.metrics.points) {
      const keys = Object.keys(point.dimensions ?? {});
      if (keys.length > 0) dimensioned.set(point.name, keys);
    }
    expect(dimensioned.size).toBeGreaterThanOrEqual(3);
    expect([...dimensioned.keys()].sort()).toEqual([...byDimension.keys()].sort());
    for (const [name, [key = ""]] of dimensioned) expect(byDimension.get(name), name).toMatch(new RegExp(`\\b${key.replace(/_/g, " ")}$`));
  });
});

describe("README, The engine: its boundaries and entry points", () => {
  it("lists ports the engine's ports.ts exports, and a provider port in provider.ts", () => {
    const ports = quotedNames(textBetween(ENGINE, "(`ports.ts`:", ";").slice("(`ports.ts`:".length));
    expect(ports.length).toBeGreaterThanOrEqual(8);
    const text = source("shared/bridge/ports.ts");
    for (const port of ports) expect(new RegExp(`export (?:interface|type) ${port}\\b|export type \\{ ${port} \\}`).test(text), port).toBe(true);
    const [provider = ""] = firstTextsSaid(ENGINE, /`provider\.ts`: a structural `(\w+)`/);
    expect(source("shared/bridge/provider.ts")).toMatch(new RegExp(`export interface ${provider}\\b`));
  });

  it("never reaches an AWS SDK from shared/bridge, through any import, static or dynamic", async () => {
    expect(ENGINE).toContain("never imports an AWS SDK");
    const modules = (readdirSync(join(ROOT, "shared/bridge"), { recursive: true }) as string[]).filter((name) => name.endsWith(".ts")).map((name) => join("shared/bridge", name));
    expect(modules.length).toBeGreaterThan(30);
    const { files, packages } = loadedWith(await importGraph(modules), modules, ["import-statement", "dynamic-import"]);
    expect(files.length).toBeGreaterThanOrEqual(modules.length);
    expect(packages).toContain("zod");
    expect(packages.filter((name) => name.startsWith("@aws-sdk/") || name.startsWith("@aws-lambda-powertools/"))).toEqual([]);
  });

  it("runs the port contract suite against every class of shared/ implementing a port the suite covers", () => {
    expect(ENGINE).toContain("One contract suite (`test/bridge/contract/`) runs against every implementation");
    const ports = [...source("test/bridge/contract/index.ts").matchAll(/export \{ describe(\w+)Contract\b/g)].map((m) => m[1] ?? "");
    expect(ports.length).toBeGreaterThanOrEqual(5);
    const filesUnder = (dir: string, suffix: string): string[] =>
      (readdirSync(join(ROOT, dir), { recursive: true }) as string[]).filter((name) => name.endsWith(suffix)).map((name) => join(dir, name));
    const implementations = filesUnder("shared", ".ts").flatMap((file) =>
      [...source(file).matchAll(/class (\w+) implements ([\w, ]+)/g)].flatMap(([, name = "", implemented = ""]) =>
        implemented.split(",").some((port) => ports.includes(port.trim())) ? [name] : [],
      ),
    );
    expect(implementations.length).toBeGreaterThanOrEqual(10);
    const suiteRuns = new Set(filesUnder("test", ".test.ts").flatMap((file) => [...source(file).matchAll(/describe\w+Contract\("(\w+)/g)].map((m) => m[1])));
    expect(implementations.filter((name) => !suiteRuns.has(name))).toEqual([]);
  });

  it("names entry points and errors the engine exports, the card modes the pollers take, the report the errors carry", () => {
    const entries = textBetween(ENGINE, "Entry points:", "A transaction cycle pulls");
    const called = textsSaid(entries, /`(\w+)\(deps/g).map(([name = ""]) => name);
    expect(called.length).toBeGreaterThanOrEqual(5);
    const errors = textsSaid(entries, /`(\w+Error)`/g).map(([name = ""]) => name);
    const exported = bridge as unknown as Record<string, unknown>;
    for (const name of [...called, ...errors]) expect(typeof exported[name], name).toBe("function");
    const modes = textsSaid(entries, /mode: ("[\w-]+"(?: \| "[\w-]+")*)/)[0]?.[0]?.split(" | ") ?? [];
    // A poll event as a schedule's JSON input gives it: any mode, checked by the poller.
    const withMode = (mode: string): PollEvent => ({ mode }) as unknown as PollEvent;
    for (const mode of modes) expect(cardModeOf(withMode(JSON.parse(mode) as string))).toBe(JSON.parse(mode));
    // The poll event's refusal names the modes it takes: the README's, and no others.
    expect(() => cardModeOf(withMode("none"))).toThrow(`must be ${modes.join(" or ")}`);
    const report = bridge.emptyReport("transactions");
    for (const name of errors) {
      const ErrorClass = exported[name] as new (message: string, context: { report: typeof report }) => { report: unknown };
      expect(new ErrorClass("x", { report }).report, name).toBe(report);
    }
  });
});

describe("README, The engine: a transaction cycle", () => {
  const cycle = textBetween(ENGINE, "A transaction cycle pulls", "Event catalog:");

  it("pulls the statuses in the order and page size it says", async () => {
    const [[first = "", second = "", size = ""] = []] = textsSaid(cycle, /pulls `client_sync_status=(\w+)`, then `(\w+)`, (\d+) per page/);
    expect(Number(size)).toBe(DEFAULT_PAGE_SIZE);
    const rig = makeRig();
    await pollTransactions(rig.deps);
    const lists = rig.provider.calls.flatMap((call) => (call.op === "listTransactions" ? [call.query] : []));
    expect([...new Set(lists.map((query) => query.client_sync_status))]).toEqual([first, second]);
    for (const query of lists) expect(query.page_size).toBe(DEFAULT_PAGE_SIZE);
  });

  it("pauses not_synced at the share of the budget it says, and stops after as many failed acknowledges in a row as the client's attempt limit", () => {
    expect(numbersSaid(cycle, /`not_synced` stops at (three quarters|half) of the time budget/)).toEqual([[NOT_SYNCED_BUDGET_SHARE]]);
    expect(numbersSaid(cycle, /up to (\w+) failures in a row, then the cycle stops/)).toEqual([[DEFAULT_RETRY.maxAttempts]]);
  });

  it("applies the PII modes it names, all of them", () => {
    const modes = firstTextsSaid(cycle, /apply the tenant's PII mode \(([^)]+)\)/)[0] ?? "";
    expect(quotedNames(modes)).toEqual([...PII_MODES]);
  });

  it("derives a UUID-shaped event id from each input it names, and from nothing else", () => {
    const said = firstTextsSaid(cycle, /UUID-shaped sha-256 of ([^)]+)\)/)[0] ?? "";
    // The README's words for the members of an event's identity.
    const words: Readonly<Record<keyof EventIdentity, RegExp>> = {
      tenant: /\btenant\b/,
      type: /\btype\b/,
      subjectId: /\bsubject\b/,
      beforeHash: /the before snapshot's hash\b/,
      beforeVersion: /the before snapshot's hash and version\b/,
      afterHash: /\bthe after-hash\b/,
    };
    const identity: EventIdentity = { tenant: "acme", type: "transaction.changed", subjectId: "s", beforeHash: "b", beforeVersion: "v", afterHash: "a" };
    const id = eventId(identity);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(eventId({ ...identity })).toBe(id);
    for (const member of Object.keys(identity) as (keyof EventIdentity)[]) {
      expect(said, member).toMatch(words[member]);
      expect(eventId({ ...identity, [member]: `${identity[member]}2` }), member).not.toBe(id);
    }
    expect(said.split(/, (?:and )?| and /).length).toBe(Object.keys(identity).length);
  });
});
