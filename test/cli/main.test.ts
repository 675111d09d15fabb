import { describe, expect, it } from "vitest";
import { EXIT } from "../../shared/cli/errors.js";
import { runInProcess } from "./helpers.js";

describe("bridge.ts main", () => {
  it("prints usage and the settings table for help, exit 0", async () => {
    const { code, stdout } = await runInProcess(["help"], {});
    expect(code).toBe(EXIT.ok);
    expect(stdout).toContain("Usage: npm run bridge -- <command>");
    expect(stdout).toMatch(/BRIDGE_STATE_DIR\s+default \.state/);
    expect(stdout).toMatch(/QASHIO_CLIENT_SECRET\s+required/);
  });

  it("rejects an unknown command with exit 2 and a pointer to help", async () => {
    const { code, stderr } = await runInProcess(["sync"], {});
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain('error: unknown command "sync"');
    expect(stderr).toContain("npm run bridge -- help");
  });

  it("rejects an unknown bench flag with exit 2", async () => {
    const { code, stderr } = await runInProcess(["bench", "--txns", "5"], {});
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain("--txns");
  });
});
