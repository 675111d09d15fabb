/**
 * README's sections Events, Provider sandbox, Benchmark and Development held to the code: the names, bounds and
 * numbers they give are read from the README and checked against what the code does or exports, and the Benchmark's
 * measured numbers against the evidence docs/benchmark.md keeps.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createSandbox, SANDBOX_IN_PROCESS_URL, type Sandbox } from "../sandbox/index.js";
import { DEFAULT_PORT, parseMainArgs } from "../sandbox/main.js";
import { PII_MODES } from "../shared/bridge/pii.js";
import { DEFAULT_PAGE_SIZE } from "../shared/bridge/index.js";
import { parseCommand } from "../shared/cli/args.js";
import { BUDGETS, floorOf, toBenchJson, type BenchMeasurement } from "../shared/cli/bench-report.js";
import { DEFAULT_EVENT_SOURCE } from "../shared/cli/config.js";
import { docSection, docText, firstNumbersSaid, firstTextsSaid, numbersSaid, textsSaid } from "./doc-text.js";
import { ROOT } from "./spec-gaps-section.js";

const README = docText("README.md");
const BENCHMARK_DOC = readFileSync(join(ROOT, "docs/benchmark.md"), "utf8");

/** README's section under `## <title>`, up to the next one, line breaks read as spaces. */
const readmeSection = (title: string): string => docSection(README, title);

const EVENTS = readmeSection("Events");
const SANDBOX = readmeSection("Provider sandbox");
const BENCH = readmeSection("Benchmark: `npm run bench`");
const DEVELOPMENT = readmeSection("Development");


/** A `[a-b]` range as numbers. */
const range = (text: string, pattern: RegExp): [number, number] => {
  const [low = Number.NaN, high = Number.NaN] = firstNumbersSaid(text, pattern);
  return [low, high];
};

/** Least and most of `values`, each within the rounding the README gives them (a whole number, or two decimals for ratios). */
function expectSpan(said: [number, number], values: readonly number[], what: string, within = 1): void {
  expect(values.length, what).toBeGreaterThan(0);
  expect(Math.abs(said[0] - Math.min(...values)), `${what}: least ${Math.min(...values)}, README ${said[0]}`).toBeLessThan(within);
  expect(Math.abs(said[1] - Math.max(...values)), `${what}: most ${Math.max(...values)}, README ${said[1]}`).toBeLessThan(within);
}

async function post(sandbox: Sandbox, path: string, body: unknown, method = "POST"): Promise<{ status: number; body: { errors?: { field: string | null; code: string }[] } & Record<string, unknown> }> {
  const response = await sandbox.fetch(`${SANDBOX_IN_PROCESS_URL}${path}`, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as { errors?: { field: string | null; code: string }[] } };
}

describe("README, Events", () => {
  it("names the default Source and the PII modes the code has", () => {
    const [source = ""] = firstTextsSaid(EVENTS, /`Source` is configurable \(default `([\w.-]+)`\)/);
    expect(source).toBe(DEFAULT_EVENT_SOURCE);
    const [modes = ""] = firstTextsSaid(EVENTS, /PII modes \(([^)]*)\)/);
    expect([...modes.matchAll(/`(\w+)`/g)].map((m) => m[1])).toEqual([...PII_MODES]);
  });
});

describe("README, Provider sandbox", () => {
  it("starts with the port, seed and latency its Start line shows when none is given, and takes each option it names", () => {
    const [port = 0, seed = 0, latency = 0] = firstNumbersSaid(SANDBOX, /`npm run sandbox -- --port (\d+) \[--seed (\d+)\] \[--latency-ms (\d+)\] \[--frozen-clock\]` prints `http:\/\/127\.0\.0\.1:(?:\d+)`/);
    const [printed = 0] = firstNumbersSaid(SANDBOX, /prints `http:\/\/127\.0\.0\.1:(\d+)`/);
    expect([port, printed]).toEqual([DEFAULT_PORT, DEFAULT_PORT]);
    expect(parseMainArgs([])).toMatchObject({ port, seed, latencyMs: latency, frozenClock: false });
    expect(parseMainArgs(["--port", String(port), "--seed", String(seed), "--latency-ms", String(latency), "--frozen-clock"])).toMatchObject({ frozenClock: true });
    // "`--port 0` takes any free port"
    expect(SANDBOX).toContain("(`--port 0` takes any free port)");
    expect(parseMainArgs(["--port", "0"]).port).toBe(0);
  });

  it("names the options createSandbox takes, and issues access tokens for the seconds it says unless told (15 minutes, 900 s)", async () => {
    const [options = ""] = firstTextsSaid(SANDBOX, /`createSandbox\(\{ ([\w, ]+) \}\)`/);
    const source = readFileSync(join(ROOT, "sandbox/index.ts"), "utf8");
    for (const name of options.split(", ")) expect(source, name).toMatch(new RegExp(`readonly ${name}\\?:`));
    const [ttlSeconds = 0] = firstNumbersSaid(SANDBOX, /access tokens live (\d+) s unless told/);
    const [ttlMinutes = 0] = firstNumbersSaid(SANDBOX, /Access tokens live (\d+) minutes of sandbox time/);
    const [clientId = "", clientSecret = ""] = firstTextsSaid(SANDBOX, /OAuth client `client_id=([\w-]+)`, `client_secret=([\w-]+)`/);
    const expiresIn = async (sandbox: Sandbox) => {
      const [company] = sandbox.control.companies();
      const redirectUri = "http://127.0.0.1:8765/callback";
      const code = sandbox.control.issueAuthorizationCode({ companyId: company?.id ?? "", redirectUri });
      const answer = await post(sandbox, "/oauth2/token", { grant_type: "authorization_code", client_id: clientId, client_secret: clientSecret, code, redirect_uri: redirectUri });
      expect(answer.status).toBe(200);
      return answer.body["expires_in"];
    };
    expect(await expiresIn(createSandbox())).toBe(ttlSeconds);
    expect(ttlMinutes * 60).toBe(ttlSeconds);
    expect(await expiresIn(createSandbox({ accessTokenTtlSeconds: ttlSeconds + 60 }))).toBe(ttlSeconds + 60);
  });

  it("lists the seeded companies, ids and legacy keys in the sandbox's order, and only the disabled ones as 403", () => {
    const said = textsSaid(SANDBOX, /([A-Z][\w ]+?) `([0-9a-f-]{36})`( \(API access disabled: 403\))?/);
    const companies = createSandbox().control.companies();
    expect(said.map(([name, id, disabled]) => ({ name: name?.replace(/^(?:Companies \(ids fixed, data from the seed\): |[^A-Z]*)/, ""), id, apiAccessEnabled: disabled === "" }))).toEqual(
      companies.map(({ name, id, apiAccessEnabled }) => ({ name, id, apiAccessEnabled })),
    );
    const [keys = ""] = firstTextsSaid(SANDBOX, /Seeded keys: ((?:`[\w-]+`,? ?)+)/);
    expect([...keys.matchAll(/`([\w-]+)`/g)].map((m) => m[1])).toEqual(companies.map((c) => c.apiKey));
  });

  it("takes the redirect URIs it names, on either loopback host, and no other host", () => {
    const hosts = textsSaid(SANDBOX, /`http:\/\/([\w.]+):<port>\/\.\.\.`/).map(([host]) => host ?? "");
    expect(hosts).toEqual(["127.0.0.1", "localhost"]);
    const sandbox = createSandbox();
    const companyId = sandbox.control.companies()[0]?.id ?? "";
    for (const host of hosts) expect(sandbox.control.issueAuthorizationCode({ companyId, redirectUri: `http://${host}:8765/callback` })).toEqual(expect.any(String));
    expect(() => sandbox.control.issueAuthorizationCode({ companyId, redirectUri: "http://example.com:8765/callback" })).toThrow();
  });

  it("holds page_size to the maximum it gives", async () => {
    const [max = 0] = firstNumbersSaid(SANDBOX, /the maximum `page_size` is (\d+)/);
    const sandbox = createSandbox();
    const [company] = sandbox.control.companies();
    const [key] = [company?.apiKey ?? ""];
    const list = (size: number) =>
      sandbox.fetch(`${SANDBOX_IN_PROCESS_URL}/legacy/erp-transactions?companyId=${company?.id ?? ""}&page_size=${size}`, { headers: { "x-api-key": key } }).then((r) => r.status);
    expect(await list(max)).toBe(200);
    expect(await list(max + 1)).toBe(400);
  });

  it("serves every control call its table names (none is an unknown route)", async () => {
    const sandbox = createSandbox();
    const company = sandbox.control.companies()[0]?.id ?? "";
    const data = sandbox.control.company(company);
    const calls = textsSaid(SANDBOX, /`(GET|POST|PATCH|DELETE) (\/_sandbox[^`]*|\.\.\.\/audit)`/).map(([method = "", path = ""]) => ({
      method,
      path: (path.startsWith("...") ? `/_sandbox/companies/{id}${path.slice(3)}` : path)
        .replace("{id}", company)
        .replace("{txId}", data?.transactions.newest()?.id ?? "")
        .replace("{cardId}", data?.cards[0]?.id ?? ""),
    }));
    expect(calls.length).toBeGreaterThanOrEqual(17);
    for (const { method, path } of calls) {
      const response = await sandbox.fetch(`${SANDBOX_IN_PROCESS_URL}${path}`, { method, headers: { "content-type": "application/json" }, ...(method === "GET" || method === "DELETE" ? {} : { body: "{}" }) });
      // Each answers for itself: a body it refuses is a 400, never a route not found.
      expect(response.status, `${method} ${path}`).not.toBe(404);
    }
  });

  it("refuses each control bound the table gives just past it (OUT_OF_RANGE where it says so), and takes the bound itself", async () => {
    const sandbox = createSandbox();
    const company = sandbox.control.companies()[0]?.id ?? "";
    const card = sandbox.control.company(company)?.cards[0]?.id ?? "";
    const [deposit = 0] = firstNumbersSaid(SANDBOX, /such as `\{"amount": [\d.]+\}`, at most ([\d,]+)\)/);
    const [spendLimit = 0] = firstNumbersSaid(SANDBOX, /`max_amount` to the cent, at most ([\d,]+)/);
    const [delay = 0] = firstNumbersSaid(SANDBOX, /is at most ([\d,]+) \(400 `OUT_OF_RANGE` beyond\)/);
    const [backlog = 0] = firstNumbersSaid(SANDBOX, /a `not_synced` backlog, at most ([\d,]+) \(400 `OUT_OF_RANGE` beyond/);
    const [latency = 0] = firstNumbersSaid(SANDBOX, /at most ([\d,]+) as `--latency-ms` \(400 `OUT_OF_RANGE` beyond\)/);
    const cases: [string, (n: number) => unknown, number, number, string | undefined][] = [
      [`/_sandbox/companies/${company}/deposits`, (n) => ({ amount: n }), deposit, 0.01, undefined],
      [`/_sandbox/companies/${company}/cards/${card}/spend_limit`, (n) => ({ max_amount: n }), spendLimit, 0.01, undefined],
      ["/_sandbox/faults", (n) => ({ count: 1, delay_ms: n }), delay, 1, "OUT_OF_RANGE"],
      ["/_sandbox/latency", (n) => ({ latency_ms: n }), latency, 1, "OUT_OF_RANGE"],
      // The bound itself would build a backlog of that size: only past it is checked.
      ["/_sandbox/reset", (n) => ({ transactions: n }), backlog, 1, "OUT_OF_RANGE"],
    ];
    for (const [path, body, bound, step, code] of cases) {
      const past = await post(sandbox, path, body(bound + step));
      expect(past.status, `${path} at ${bound + step}`).toBe(400);
      if (code !== undefined) expect(past.body.errors?.map((e) => e.code), path).toEqual([code]);
      if (path !== "/_sandbox/reset") expect((await post(sandbox, path, body(bound))).status, `${path} at ${bound}`).toBeLessThan(300);
    }
    // "as `--latency-ms`": the command line's bound is the control surface's.
    expect(parseMainArgs(["--latency-ms", String(latency)]).latencyMs).toBe(latency);
    expect(() => parseMainArgs(["--latency-ms", String(latency + 1)])).toThrow(/--latency-ms/);
  });

  it("serves the earlier generation's read paths it names with x-api-key and companyId, without the parent_qashio_id filter", async () => {
    const [head = ""] = firstTextsSaid(SANDBOX, /\*\*Earlier generation\.\*\* (.*?) with header `x-api-key` and query `companyId`/);
    const paths = [...head.matchAll(/`(\/legacy\/[\w-]+)`/g)].map((m) => m[1] ?? "");
    expect(paths.length).toBeGreaterThanOrEqual(4);
    const sandbox = createSandbox();
    const [company] = sandbox.control.companies();
    const read = (path: string) => sandbox.fetch(`${SANDBOX_IN_PROCESS_URL}${path}${path.includes("?") ? "&" : "?"}companyId=${company?.id ?? ""}`, { headers: { "x-api-key": company?.apiKey ?? "" } });
    for (const path of paths) expect((await read(path)).status, path).toBe(200);
    // The key is dropped, as an unknown one: the list is the one without it.
    const total = async (path: string) => ((await (await read(path)).json()) as { pagination: { total_records: number } }).pagination.total_records;
    expect(await total("/legacy/erp-transactions?parent_qashio_id=x")).toBe(await total("/legacy/erp-transactions"));
    const current = await sandbox.fetch(`${SANDBOX_IN_PROCESS_URL}/legacy/erp-transactions?companyId=${company?.id ?? ""}`);
    expect(current.status, "no x-api-key").toBe(401);
  });
});

/** A measurement with round numbers, for the shape of the JSON line. */
const MEASUREMENT: BenchMeasurement = {
  transactions: 100,
  events: 100,
  providerCalls: 4,
  floorCalls: 3,
  wallMs: 100,
  latencyMs: 20,
  bridgeCpuUs: 10_000,
  peakRssMb: 100,
  notSyncedLeft: 0,
  sink: "jsonl",
  notes: [],
};

describe("README, Benchmark", () => {
  it("runs with the backlog and latency its first command's comment gives when none is told", () => {
    const [backlog = 0, latency = 0] = firstNumbersSaid(BENCH, /npm run bench # ([\d,]+)-transaction backlog, (\d+) ms per provider request/);
    expect(parseCommand(["bench"])).toMatchObject({ args: { transactions: backlog, latencyMs: latency } });
  });

  it("gives the JSON line's keys in their order, the baseline's last", () => {
    const [keys = ""] = firstTextsSaid(BENCH, /`--json` prints `\{([^}]*)\}`/);
    expect([...keys.matchAll(/"(\w+)"/g)].map((m) => m[1])).toEqual(Object.keys(toBenchJson(MEASUREMENT)));
    const [last = ""] = firstTextsSaid(BENCH, /added to the JSON line, last, as `(\w+)`/);
    expect(Object.keys(toBenchJson({ ...MEASUREMENT, baselineCpuUs: 5_000 })).at(-1)).toBe(last);
  });

  it("counts the floor as it says (pages of the engine's page size, one empty outdated page, one acknowledge a page), and the calls its table gives against it", () => {
    const [pageSize = 0, ackSize = 0] = firstNumbersSaid(BENCH, /list pages \(`ceil\(N\/(\d+)\)` \+ one empty `outdated` page\) \+ acknowledge calls \(`ceil\(N\/(\d+)\)`\)/);
    expect([pageSize, ackSize]).toEqual([DEFAULT_PAGE_SIZE, DEFAULT_PAGE_SIZE]);
    const said = numbersSaid(BENCH, /([\d,]+) (?:calls )?against ([\d,]+) at ([\d,]+)/);
    expect(said.length).toBe(2);
    for (const [calls = 0, floor = 0, backlog = 0] of said) {
      expect(floorOf({ transactions: backlog, pageSize, ackBatchSize: ackSize }).calls, `floor at ${backlog}`).toBe(floor);
      expect(calls - floor, "one call past the floor").toBe(1);
    }
    const [ratio = 0] = firstNumbersSaid(BENCH, /at 10,000 \(([\d.]+)x\)/);
    const [calls = 0, floor = 0] = said[0] ?? [];
    expect(ratio).toBe(Math.round((calls / floor) * 1000) / 1000);
  });

  it("states the budgets of its table as the bench checks them", () => {
    const [calls = 0] = firstNumbersSaid(BENCH, /\| provider calls <= ([\d.]+)x floor \|/);
    const [wall = 0] = firstNumbersSaid(BENCH, /\| wall <= ([\d.]+)x floor \|/);
    const [cpu = 0] = firstNumbersSaid(BENCH, /\| CPU <= (\d+) us per transaction \|/);
    const [rss = 0] = firstNumbersSaid(BENCH, /\| peak RSS < (\d+) MB at 100,000 \|/);
    expect({ callsRatio: calls, wallRatio: wall, cpuUsPerTxn: cpu, peakRssMb: rss }).toEqual({ ...BUDGETS });
    // "which leaves 0-62 us": the CPU budget less the floor's range, none below 0.
    const [floorLow, floorHigh] = range(BENCH, /takes (\d+)-(\d+) us a transaction on this VM/);
    expect(range(BENCH, /which leaves (\d+)-(\d+) us for what the bridge does/)).toEqual([Math.max(0, cpu - floorHigh), cpu - floorLow]);
  });
});

/** The cells of docs/benchmark.md's "CPU by sitting" rows: [sitting, Node 20, Node 24, floor, ratio]. */
const SITTINGS = BENCHMARK_DOC.slice(BENCHMARK_DOC.indexOf("## CPU by sitting"))
  .split("\n")
  .filter((row) => row.startsWith("| 20"))
  .map((row) => row.slice(1, -1).split("|").map((cell) => cell.trim()));

/** The numbers of `cell` at least `least` (so not a run count), up to the Node 24 part of a `Node 20 / Node 24` cell. */
const measured = (cell: string | undefined, least: number, most = Infinity): number[] =>
  [...(cell ?? "").split(" / ")[0]!.matchAll(/\d+(?:\.\d+)?/g)].map((m) => Number(m[0])).filter((n) => n >= least && n <= most);

describe("README, Benchmark: the measurements agree with docs/benchmark.md", () => {
  const cpuRow = /\| CPU <= \d+ us per transaction \| (.*?) \|/.exec(BENCH)?.[1] ?? "";

  it("gives the CPU ranges at 10,000 of every sitting, Node 20 and Node 24, the floor and the ratio", () => {
    expect(SITTINGS.length).toBeGreaterThan(40);
    expectSpan(range(cpuRow, /Node 20\*\*[^:]*: (\d+)-(\d+) us at 10,000/), SITTINGS.flatMap((s) => measured(s[1], 50)), "Node 20 CPU at 10,000");
    expectSpan(range(cpuRow, /a floor \(`--baseline`\) of (\d+)-(\d+) us/), SITTINGS.flatMap((s) => measured(s[3], 30)), "the floor");
    expectSpan(range(cpuRow, /the bridge takes ([\d.]+)-([\d.]+)x of it/), SITTINGS.flatMap((s) => measured(s[4], 1, 5)), "the ratio to the floor", 0.005);
    const node24 = SITTINGS.flatMap((s) => measured(s[2], 30));
    const [quietLow] = range(cpuRow, /(\d+)-(\d+) us at 10,000 on quiet VMs/);
    const [, slowHigh] = range(cpuRow, /(\d+)-(\d+) us on slow ones/);
    expectSpan([quietLow, slowHigh], node24, "Node 24 CPU at 10,000");
    // The floor the README's explanation gives is the row's.
    expect(range(BENCH, /takes (\d+)-(\d+) us a transaction on this VM/)).toEqual(range(cpuRow, /a floor \(`--baseline`\) of (\d+)-(\d+) us/));
  });

  it("counts no more runs, nor runs within the budget, than the sittings hold", () => {
    const [runs = 0, within = 0] = firstNumbersSaid(cpuRow, /over more than (\d+) runs, within the budget in at least (\d+) of them/);
    const counts = SITTINGS.map((s) => [...(s[1] ?? "").matchAll(/(?:^|: )(\d+)(?:,| at)/g)].reduce((sum, m) => sum + Number(m[1]), 0));
    const withins = SITTINGS.map((s) => {
      const cell = s[1] ?? "";
      const [, n] = /\b(\d+|one) within/.exec(cell) ?? [];
      if (n !== undefined) return n === "one" ? 1 : Number(n);
      return /all within/.test(cell) ? Number(/^(\d+),/.exec(cell)?.[1] ?? 0) : 0;
    });
    expect(counts.reduce((a, b) => a + b, 0)).toBeGreaterThan(runs);
    expect(withins.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(within);
  });

  it("gives the CPU range at 100,000 on Node 20 of the runs listed, and the first table's calls and peak RSS", () => {
    const list = /At 100,000 on Node 20: (.*?); at 50,000/s.exec(BENCHMARK_DOC)?.[1] ?? "";
    expectSpan(range(cpuRow, /(\d+)-(\d+) us at 100,000/), [...list.matchAll(/([\d.]+) us \(/g)].map((m) => Number(m[1])), "Node 20 CPU at 100,000");
    const [node20 = 0, node24 = 0] = firstNumbersSaid(BENCH, /met: (\d+) MB on Node 20, (\d+) MB on Node 24/);
    expect(BENCHMARK_DOC).toMatch(new RegExp(`\\| 20 \\| 100,000 \\(1 run\\) \\| 2,002 \\(2,001\\)[^\\n]*\\| ${node20} MB \\|`));
    expect(BENCHMARK_DOC).toMatch(new RegExp(`\\| 24 \\| 100,000 \\(1 run\\) \\| 2,002 \\(2,001\\)[^\\n]*\\| ${node24} MB \\|`));
    expect(BENCHMARK_DOC).toMatch(/\| 20 \| 10,000 \| 202 \(201\)/);
  });

  it("gives the figures of its explanation as docs/benchmark.md measured them", () => {
    const [low = 0, high = 0] = firstNumbersSaid(BENCH, /against the (\d+)-(\d+) us it spends on it/);
    expect(BENCHMARK_DOC.replace(/\s+/g, " ")).toContain(`against the ${low}-${high} us it spends on it`);
    const [compiled = 0] = firstNumbersSaid(BENCH, /compiles about (\d+) ms of the bridge/);
    expect(BENCHMARK_DOC.replace(/\s+/g, " ")).toContain(`compiles about ${compiled} ms of the bridge`);
    const [cpu = 0] = firstNumbersSaid(BENCH, /whose CPU was about (\d+) us a transaction or more/);
    expect(BENCHMARK_DOC.replace(/\s+/g, " ")).toContain(`CPU was ${cpu} us or more`);
  });
});

describe("README, Benchmark: what a run's options change, as docs/benchmark.md measured it", () => {
  it("gives the CPU a null sink takes off as docs/benchmark.md measured it", () => {
    const [off = 0] = firstNumbersSaid(BENCH, /a null sink takes about (\d+) us a transaction off/);
    const doc = BENCHMARK_DOC.replace(/\s+/g, " ");
    const [dropped = 0, written = 0] = firstNumbersSaid(doc, /`--sink null`[^.]*? took (\d+)-\d+ us a transaction, against (\d+)-\d+ us for drains writing them/);
    expect(doc).toContain(`about ${off} us a transaction less`);
    // The lower ends of the two ranges apart, as "about".
    expect(written - dropped).toBe(off);
  });
});

describe("README, Benchmark: peak RSS beside the first table's", () => {
  it("gives the range of the other runs at 100,000 that docs/benchmark.md records, since the date it names", () => {
    const [since = ""] = firstTextsSaid(BENCH, /\(other runs since (\d{4}-\d\d-\d\d) \d+-\d+ MB/);
    const said = range(BENCH, /\(other runs since [\d-]+ (\d+)-(\d+) MB/);
    const doc = BENCHMARK_DOC.replace(/\s+/g, " ");
    const [node20Low = 0, node20High = 0, node24Low = 0, node24High = 0] = firstNumbersSaid(
      doc,
      new RegExp(`Peak RSS at 100,000, every run recorded since ${since}[^:]*: ([\\d.]+)-([\\d.]+) MB on Node 20, ([\\d.]+)-([\\d.]+) MB on Node 24`),
    );
    expectSpan(said, [node20Low, node20High, node24Low, node24High], "peak RSS of the other runs");
    // The runs listed at 100,000 fall in the Node 20 range the record gives.
    const listed = [.../At 100,000 on Node 20: (.*?); at 50,000/s.exec(BENCHMARK_DOC)?.[1]?.matchAll(/peak RSS ([\d.]+) MB/g) ?? []].map((m) => Number(m[1]));
    expect(listed.length).toBeGreaterThan(3);
    expectSpan([node20Low, node20High], [...listed, ...firstNumbersSaid(BENCH, /met: (\d+) MB on Node 20/)], "Node 20's peak RSS at 100,000", 0.5);
  });
});

describe("README, Development", () => {
  it("names the scripts package.json runs", () => {
    const scripts = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
    expect(scripts["test"]).toBe("vitest run");
    const [typecheck = ""] = firstTextsSaid(DEVELOPMENT, /npm run typecheck # ([\w -]+?),/);
    expect(scripts["typecheck"]).toBe(typecheck);
    expect(scripts["lint"]).toMatch(/^eslint\b/);
    const [tenantsSaid = 0] = firstNumbersSaid(DEVELOPMENT, /cdk synth of the (\w+)-tenant example/);
    const tenantsFile = /tenantsFile=(\S+)/.exec(scripts["synth"] ?? "")?.[1] ?? "";
    expect((JSON.parse(readFileSync(join(ROOT, tenantsFile), "utf8")) as { tenants: unknown[] }).tenants).toHaveLength(tenantsSaid);
  });

  it("gives .ci/run's limits of a test run, and the slow tests the Node 24 pass skips", () => {
    const ci = readFileSync(join(ROOT, ".ci/run"), "utf8");
    const [node20 = 0, node24 = 0] = firstNumbersSaid(DEVELOPMENT, /after its limit \((\d+) min under Node 20, (\d+) under Node 24/);
    expect(Number(/run_tests "tests \(Node 20\)" (\d+) /.exec(ci)?.[1]) / 60).toBe(node20);
    expect(Number(/run_tests "unit tests \(Node 24\)" (\d+) /.exec(ci)?.[1]) / 60).toBe(node24);
    expect(ci).toMatch(/QASHIO_SKIP_SLOW=1 run_tests "unit tests \(Node 24\)"/);
    const [slow = 0] = firstNumbersSaid(DEVELOPMENT, /skips the (\w+) slowest tests \(`QASHIO_SKIP_SLOW=1`/);
    const skipping = readdirSync(join(ROOT, "test"), { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".test.ts"))
      .flatMap((file) => [...readFileSync(join(ROOT, "test", file), "utf8").matchAll(/skipIf\(process\.env\.QASHIO_SKIP_SLOW === "1"\)/g)].map(() => file));
    expect(skipping).toHaveLength(slow);
    for (const file of skipping) expect(file).toMatch(/^functions\//);
  });
});
