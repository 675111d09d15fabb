import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { ROOT, spawnScript } from "./helpers.js";
import { browserEnvironment, openerCommand, openInBrowser } from "../../shared/cli/open-url.js";

const URL_WITH_QUERY = "http://127.0.0.1:4711/oauth2/authorize?response_type=code&client_id=c&scope=a%20b&state=x^y";

describe("openerCommand", () => {
  it("escapes cmd's & and ^ on Windows and passes the arguments verbatim, so start gets the whole URL", () => {
    const { command, args, verbatim } = openerCommand(URL_WITH_QUERY, "win32");
    expect(command).toBe("cmd");
    expect(verbatim).toBe(true);
    expect(args).toEqual([
      "/d",
      "/s",
      "/c",
      "start",
      '""',
      "http://127.0.0.1:4711/oauth2/authorize?response_type=code^&client_id=c^&scope=a%20b^&state=x^^y",
    ]);
    // What cmd runs after removing its escapes is the URL itself.
    expect((args.at(-1) as string).replace(/\^(.)/g, "$1")).toBe(URL_WITH_QUERY);
  });

  it("escapes every other metacharacter of cmd too (| < > and parentheses), which a URL's query may hold", () => {
    const url = "http://127.0.0.1:4711/cb?q=a|b<c>d(e)";
    expect(openerCommand(url, "win32").args.at(-1)).toBe("http://127.0.0.1:4711/cb?q=a^|b^<c^>d^(e^)");
  });

  it.each([
    ["darwin", "open"],
    ["linux", "xdg-open"],
  ] as const)("hands the URL unchanged to the %s opener", (platform, command) => {
    expect(openerCommand(URL_WITH_QUERY, platform)).toEqual({ command, args: [URL_WITH_QUERY], verbatim: false });
  });
});

describe("browserEnvironment", () => {
  it("withholds the bridge's and AWS's variables whatever their case (Windows names ignore it), and only those that start so", () => {
    const env = { qashio_client_secret: "s", Bridge_Pii_Salt: "p", aws_session_token: "t", MY_AWS_PROFILE_NAME: "kept", PATH: "/usr/bin" };
    expect(browserEnvironment(env)).toEqual({ MY_AWS_PROFILE_NAME: "kept", PATH: "/usr/bin" });
  });
});

describe("openInBrowser", () => {
  it("starts the opener without the bridge's settings or AWS credentials in its environment, which a browser would keep", async () => {
    const dir = mkdtempSync(join(tmpdir(), "qashio-open-url-"));
    try {
      // A stand-in xdg-open, first on PATH, writes down the URL and the environment it was given.
      const seen = join(dir, "seen");
      writeFileSync(join(dir, "xdg-open"), `#!/bin/sh\n{ echo "$1"; env; } > "${seen}.tmp" && mv "${seen}.tmp" "${seen}"\n`);
      chmodSync(join(dir, "xdg-open"), 0o755);
      vi.stubEnv("PATH", `${dir}:${process.env.PATH ?? ""}`);
      vi.stubEnv("QASHIO_CLIENT_SECRET", "client-secret-value");
      vi.stubEnv("QASHIO_REFRESH_TOKEN", "refresh-token-value");
      vi.stubEnv("BRIDGE_PII_SALT", "salt-value");
      vi.stubEnv("AWS_SECRET_ACCESS_KEY", "aws-secret-value");
      vi.stubEnv("LANG_OPEN_URL_TEST", "kept");

      expect(await openInBrowser(URL_WITH_QUERY, "linux")).toBe(true);
      await vi.waitFor(() => readFileSync(seen, "utf8"), { timeout: 5_000 });
      const [url, ...env] = readFileSync(seen, "utf8").split("\n");
      expect(url).toBe(URL_WITH_QUERY);
      expect(env).toContain("LANG_OPEN_URL_TEST=kept");
      expect(env.filter((line) => /^(QASHIO_|BRIDGE_|AWS_)/.test(line))).toEqual([]);
    } finally {
      vi.unstubAllEnvs();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("resolves false when no opener is installed (a machine without a desktop): the printed address is the way on", async () => {
    const dir = mkdtempSync(join(tmpdir(), "qashio-open-url-"));
    try {
      // PATH holds only an empty directory: xdg-open cannot be found.
      vi.stubEnv("PATH", dir);
      expect(await openInBrowser(URL_WITH_QUERY, "linux")).toBe(false);
    } finally {
      vi.unstubAllEnvs();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("lets the command end while the browser it started stays open: the opener leads a session of its own and holds none of the command's output", async () => {
    const dir = mkdtempSync(join(tmpdir(), "qashio-open-url-"));
    const seen = join(dir, "seen");
    try {
      // A stand-in xdg-open that stays open as a browser does: it writes down its session id and pid, then sleeps.
      writeFileSync(join(dir, "xdg-open"), `#!/bin/sh\n{ cut -d' ' -f6 /proc/$$/stat; echo $$; } > "${seen}.tmp" && mv "${seen}.tmp" "${seen}"\nexec sleep 120\n`);
      chmodSync(join(dir, "xdg-open"), 0o755);
      const script = join(dir, "open.mts");
      writeFileSync(script, `import { openInBrowser } from ${JSON.stringify(join(ROOT, "shared/cli/open-url.ts"))};\nconsole.log(await openInBrowser(${JSON.stringify(URL_WITH_QUERY)}, "linux"));\n`);
      // The outcome waits for the command's exit and for its output pipes to close: neither may wait for the browser
      // (were one to, the test would time out long before the stand-in's sleep ends).
      const { code, stdout } = await spawnScript(script, [], { PATH: `${dir}:${process.env.PATH ?? ""}` }).outcome;
      expect({ code, stdout }).toEqual({ code: 0, stdout: "true\n" });
      const [session, pid] = (await vi.waitFor(() => readFileSync(seen, "utf8"), { timeout: 5_000 })).trim().split("\n");
      // Still open once the command ended; detached: Ctrl-C on the command (its process group) does not close it.
      expect(() => process.kill(Number(pid), 0)).not.toThrow();
      expect(session).toBe(pid);
    } finally {
      const pid = existsSync(seen) ? Number(readFileSync(seen, "utf8").trim().split("\n")[1]) : 0;
      try {
        if (pid > 0) process.kill(pid);
      } catch {
        // It ended by itself (a failed run waited for it): nothing to stop.
      }
      rmSync(dir, { recursive: true, force: true });
    }
  }, 40_000);
});
