import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_PORT, parseMainArgs } from "../../sandbox/main.js";
import { SandboxUsageError } from "../../sandbox/index.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Every sandbox a test started: one a failed assertion left running is killed after it, not left listening. */
const started: ReturnType<typeof spawn>[] = [];
afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

/** `preload`: a module of test/sandbox/support run first. */
function start(args: string[], entry = "sandbox/main.ts", preload?: string) {
  const imports = ["--import", "tsx", ...(preload === undefined ? [] : ["--import", pathToFileURL(join(ROOT, "test/sandbox/support", preload)).href])];
  const child = spawn(process.execPath, [...imports, entry, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  started.push(child);
  return child;
}

/**
 * `npm run sandbox` whose clean stop hangs (close-hangs.ts), once it printed its companies: how it ended (the signal
 * that killed it) and its stderr so far.
 */
async function startHanging() {
  const child = start(["--port", "0"], undefined, "close-hangs.ts");
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
  let err = "";
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  let out = "";
  await new Promise<void>((resolve) =>
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("companies:")) resolve();
    }),
  );
  return { child, exited, err: () => err };
}

function exitOf(child: ReturnType<typeof start>): Promise<number | null> {
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/** The URL the sandbox prints, once it printed its companies. */
function urlOf(child: ReturnType<typeof start>): Promise<string> {
  return new Promise((resolve) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /http:\/\/127\.0\.0\.1:\d+/.exec(out);
      if (match && out.includes("companies:")) resolve(match[0]);
    });
  });
}

describe("parseMainArgs", () => {
  it("reads port, seed, latency and the frozen clock, with defaults", () => {
    expect(parseMainArgs([])).toEqual({ port: DEFAULT_PORT, seed: 1, latencyMs: 0, frozenClock: false, help: false });
    expect(parseMainArgs(["--port", "0", "--seed", "42", "--latency-ms", "25", "--frozen-clock"])).toEqual({ port: 0, seed: 42, latencyMs: 25, frozenClock: true, help: false });
  });

  it.each([[["--port", "abc"]], [["--port", "70000"]], [["--seed", "-1"]], [["--latency-ms", "1.5"]], [["--verbose"]], [["extra"]], [["--port"]]])(
    "refuses %j with a usage error",
    (argv) => {
      expect(() => parseMainArgs(argv)).toThrow(SandboxUsageError);
      // Named by its class, as a stack trace or String(error) shows it (the sandbox prints the message alone).
      expect(() => parseMainArgs(argv)).toThrow(expect.objectContaining({ name: "SandboxUsageError" }));
    },
  );

  // As the bridge's options: a value with a leading dash is judged by its own rule (parseArgs would advise `=`), and a
  // whole number in another form (1e3) is not told it is no integer.
  it.each([
    [["--latency-ms", "-5"], '--latency-ms must be an integer from 0 to 60000, got "-5"'],
    [["--seed", "-1"], '--seed must be an integer from 0 to 4294967295, got "-1"'],
    [["--port", "1e3"], '--port must be an integer from 0 to 65535 in plain digits, got "1e3": write 1000'],
    [["--latency-ms", "5.0"], '--latency-ms must be an integer from 0 to 60000 in plain digits, got "5.0": write 5'],
  ])("answers %j with the rule the value breaks", (argv, message) => {
    expect(() => parseMainArgs(argv)).toThrow(new SandboxUsageError(message));
  });

  it("reads a number with blanks around it (a quoted value), as the bridge does", () => {
    expect(parseMainArgs(["--port", " 4010 "]).port).toBe(4010);
  });

  it("refuses an option given twice, as the bridge does, rather than listen where the last one says", () => {
    expect(() => parseMainArgs(["--port", "4010", "--port=4011"])).toThrow(new SandboxUsageError("--port is given 2 times; give it once"));
  });

  it("takes each option's largest value and refuses one past it", () => {
    expect(parseMainArgs(["--port", "65535", "--seed", "4294967295", "--latency-ms", "60000"])).toMatchObject({ port: 65_535, seed: 4_294_967_295, latencyMs: 60_000 });
    expect(() => parseMainArgs(["--port", "65536"])).toThrow(new SandboxUsageError('--port must be an integer from 0 to 65535, got "65536"'));
    expect(() => parseMainArgs(["--latency-ms", "60001"])).toThrow(new SandboxUsageError('--latency-ms must be an integer from 0 to 60000, got "60001"'));
  });

  it("answers a blank value with the rule, not with advice to write 0, and quotes a value as given, blanks included", () => {
    expect(() => parseMainArgs(["--seed", "  "])).toThrow(new SandboxUsageError('--seed must be an integer from 0 to 4294967295, got "  "'));
    expect(() => parseMainArgs(["--port", " 70000 "])).toThrow(new SandboxUsageError('--port must be an integer from 0 to 65535, got " 70000 "'));
  });

  it("names the unknown option or the stray argument it refuses", () => {
    expect(() => parseMainArgs(["--verbose"])).toThrow(/^Unknown option '--verbose'/);
    expect(() => parseMainArgs(["extra"])).toThrow(/^Unexpected argument 'extra'/);
  });

  it("reads --help and -h as asking for the usage", () => {
    expect(parseMainArgs(["--help"]).help).toBe(true);
    expect(parseMainArgs(["-h"]).help).toBe(true);
  });
});

describe("parseMainArgs under npm", () => {
  it("refuses options npm kept for itself (given before `--`), naming the command line with `--`", () => {
    // `npm run sandbox --frozen-clock`: npm keeps the flag, and the sandbox would start on real time.
    expect(() => parseMainArgs([], { npm_lifecycle_event: "sandbox", npm_config_frozen_clock: "true" })).toThrow(
      new SandboxUsageError(
        "npm kept --frozen-clock for itself: options after the script name go to npm unless they follow `--`, as in " +
          "`npm run sandbox -- --frozen-clock` (given no such option, an npmrc sets it: see `npm config get frozen-clock`)",
      ),
    );
    // `npm run sandbox --port 4010 --latency-ms 5`: npm keeps both options, and only their values reach the sandbox.
    expect(() => parseMainArgs(["4010", "5"], { npm_lifecycle_event: "sandbox", npm_config_port: "true", npm_config_latency_ms: "true" })).toThrow(
      /^npm kept --port, --latency-ms for itself: .* as in `npm run sandbox -- --port <value> --latency-ms <value>`/,
    );
  });

  it("accepts options after `--`, and npm settings outside `npm run sandbox`", () => {
    expect(parseMainArgs(["--port", "0"], { npm_lifecycle_event: "sandbox", npm_config_cache: "/tmp" }).port).toBe(0);
    expect(parseMainArgs([], { npm_lifecycle_event: "test", npm_config_port: "true" }).port).toBe(DEFAULT_PORT);
  });
});

describe("npm run sandbox", () => {
  it("prints the URL and the seeded credentials once listening, serves, and stops cleanly on SIGTERM", async () => {
    const child = start(["--port", "0", "--seed", "3"]);
    const exited = exitOf(child);
    let out = "";
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const match = /http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
        if (match && out.includes("companies:") && out.split("\n").length > 9) resolve(match[0]);
      });
      child.once("exit", (code) => reject(new Error(`exited early with ${code}: ${out}`)));
    });
    expect(out).toContain("client_id=sandbox-client");
    expect(out).toContain("client_secret=sandbox-secret");
    expect(out).toContain("3f6c1a52-8d4e-4b7a-9c21-5e0f7d9a1b01");
    expect(out).toContain("(seed 3, latency 0 ms)");
    // Only the company whose API access is off is marked so.
    expect(out.split("\n").filter((l) => l.includes("(API access disabled: 403)"))).toEqual([expect.stringContaining("c4e5f6a7-b8c9-4dae-9f01-2b3c4d5e6f03")]);
    const companies = (await (await fetch(`${url}/_sandbox/companies`)).json()) as { data: unknown[] };
    expect(companies.data).toHaveLength(3);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });

  it("starts from a checkout whose path holds a # or %, or is reached through a symbolic link", async () => {
    // A URL built from the path text read `#` as a fragment (and `%` as an escape): the entry check failed, and the
    // sandbox exited 0 having printed nothing.
    const dir = mkdtempSync(join(tmpdir(), "sandbox-main-"));
    try {
      const link = join(dir, "c# 100%");
      symlinkSync(ROOT, link);
      const child = start(["--port", "0"], join(link, "sandbox", "main.ts"));
      const exited = exitOf(child);
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => {
        const before = out;
        out += chunk.toString();
        if (!before.includes("companies:") && out.includes("companies:")) child.kill("SIGTERM");
      });
      expect(await exited).toBe(0);
      expect(out).toContain("Qashio provider sandbox listening on http://127.0.0.1:");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("ends by itself on SIGTERM while an answer waits out its latency: the connection is closed, exit 0 within seconds", async () => {
    // It ends once nothing is left to run (test/process-exit.test.ts): a request held open must not keep it alive.
    const child = start(["--port", "0", "--latency-ms", "60000"]);
    const exited = exitOf(child);
    const url = await urlOf(child);
    const answer = fetch(`${url}/oauth2/token`, { method: "POST" }).then(() => "answered", () => "closed");
    // A control call (no latency) sent after it is answered once the sandbox holds the first.
    await fetch(`${url}/_sandbox/companies`);
    const sent = performance.now();
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(performance.now() - sent).toBeLessThan(10_000);
    expect(await answer).toBe("closed");
  });

  it("keeps sandbox time still with --frozen-clock, moved only by POST /_sandbox/clock; without it time follows real time", async () => {
    const clockOf = async (url: string) => ((await (await fetch(`${url}/_sandbox/clock`)).json()) as { data: { now: string } }).data.now;
    const pause = () => new Promise((resolve) => setTimeout(resolve, 50));
    const frozen = start(["--port", "0", "--frozen-clock"]);
    const frozenExit = exitOf(frozen);
    const frozenUrl = await urlOf(frozen);
    const first = await clockOf(frozenUrl);
    await pause();
    expect(await clockOf(frozenUrl)).toBe(first);
    await fetch(`${frozenUrl}/_sandbox/clock`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ advance_seconds: 60 }) });
    expect(Date.parse(await clockOf(frozenUrl)) - Date.parse(first)).toBe(60_000);
    frozen.kill("SIGTERM");
    expect(await frozenExit).toBe(0);
    const real = start(["--port", "0"]);
    const realExit = exitOf(real);
    const realUrl = await urlOf(real);
    const before = await clockOf(realUrl);
    await pause();
    expect(Date.parse(await clockOf(realUrl))).toBeGreaterThan(Date.parse(before));
    real.kill("SIGTERM");
    expect(await realExit).toBe(0);
  });

  it("stops cleanly on SIGINT too", async () => {
    const child = start(["--port", "0"]);
    const exited = exitOf(child);
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    await new Promise<void>((resolve) => child.stdout.on("data", (chunk: Buffer) => chunk.toString().includes("http://127.0.0.1:") && resolve()));
    child.kill("SIGINT");
    expect(await exited).toBe(0);
    expect(out).toContain("\nsandbox: SIGINT received, stopping\n");
  });

  it.each([
    ["SIGINT", "SIGTERM"],
    ["SIGTERM", "SIGINT"],
    ["SIGINT", "SIGINT"],
    ["SIGTERM", "SIGTERM"],
  ] as const)("a second stop signal of any kind ends it at once, killed by SIGINT, when the clean stop hangs: %s then %s", async (first, second) => {
    const { child, exited, err } = await startHanging();
    child.kill(first);
    await new Promise<void>((resolve) => child.stdout.on("data", (chunk: Buffer) => chunk.toString().includes("stopping") && resolve()));
    // A person's second press: well after the first (closer, it is the first one delivered again).
    await new Promise((resolve) => setTimeout(resolve, 100));
    child.kill(second);
    const signal = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve("still running after 5 s"), 5_000))]);
    expect(signal).toBe("SIGINT");
    expect(err()).toContain("stopped at once");
  });

  it.each([
    ["SIGINT", "SIGINT"],
    ["SIGTERM", "SIGTERM"],
    ["SIGINT", "SIGTERM"],
  ] as const)("takes one stop delivered twice a few ms apart (a terminal's Ctrl-C then npm relaying it, or a kill of the job) for one: %s then %s", async (first, second) => {
    // The clean stop hangs, so the process is still there to show what the second signal did.
    const { child, exited, err } = await startHanging();
    child.kill(first);
    // Not at once: two pending signals of a kind are one; the relay comes once the wrapper's handler ran.
    await new Promise((resolve) => setTimeout(resolve, 5));
    child.kill(second);
    const early = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve("running"), 500))]);
    expect({ early, err: err() }).toEqual({ early: "running", err: "" });
    // A person's second press, later, still ends it at once.
    child.kill("SIGINT");
    expect(await exited).toBe("SIGINT");
    expect(err()).toContain("stopped at once");
  });

  it("stops cleanly when its stdout was closed (`npm run sandbox | head -3`), instead of dying of EPIPE", async () => {
    const child = start(["--port", "0"]);
    const exited = exitOf(child);
    let err = "";
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    await new Promise<void>((resolve) => child.stdout.on("data", (chunk: Buffer) => chunk.toString().includes("companies:") && resolve()));
    child.stdout.destroy();
    child.kill("SIGINT");
    expect(await exited).toBe(0);
    expect(err).not.toContain("EPIPE");
  });

  it("exits 2 with a clear message on bad arguments", async () => {
    const child = start(["--port", "nope"]);
    let err = "";
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    expect(await exitOf(child)).toBe(2);
    expect(err).toMatch(/^sandbox: --port must be an integer from 0 to 65535, got "nope"\nUsage: npm run sandbox -- /);
  });

  it("prints its usage on stdout for --help and exits 0 without listening", async () => {
    const child = start(["--help", "--port", "0"]);
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    // One that listened would not end by itself: the test would time out.
    expect(await exitOf(child)).toBe(0);
    expect(out).toMatch(/^Usage: npm run sandbox -- /);
    expect(out).not.toContain("listening");
    expect(err).toBe("");
  });

  it("exits 2 naming the address and the fix when its port is taken, as the bridge's authorize --port does", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = taken.address() as AddressInfo;
      const child = start(["--port", String(port)]);
      let err = "";
      child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
      expect(await exitOf(child)).toBe(2);
      expect(err).toBe(`sandbox: cannot listen on 127.0.0.1:${port}: the port is in use; pass another --port, or --port 0 for any free one\n`);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
