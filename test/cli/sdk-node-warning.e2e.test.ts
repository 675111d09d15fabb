/**
 * End-to-end: when `authorize --secret-id` prints the AWS SDK's Node 20 notice (`NodeVersionSupportWarning`), as
 * README's Requirements says. The SDK prints it once per process, on building its first client, so only a child
 * process shows when that is.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { EXIT } from "../../shared/cli/errors.js";
import { tempDirPerTest } from "../temp-dir.js";
import { ROOT, spawnBridge } from "./helpers.js";

const NOTICE = "NodeVersionSupportWarning";
/** The SDK versions pinned here warn on Node below 22. */
const WARNED = Number(process.versions.node.split(".")[0]) < 22;
const ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:qashio-bridge-acme-AbCdEf";

/** No AWS profile, credentials or instance metadata of this machine: nothing but the settings given decides. */
const noAws = (dir: string): Record<string, string> => ({
  AWS_CONFIG_FILE: `${dir}/no-aws-config`,
  AWS_SHARED_CREDENTIALS_FILE: `${dir}/no-aws-credentials`,
  AWS_EC2_METADATA_DISABLED: "true",
});

/** README's sentence on the notice, whitespace collapsed. */
function readmeOnNotice(): string {
  const readme = readFileSync(`${ROOT}README.md`, "utf8").replace(/\s+/g, " ");
  return /The pinned AWS SDK runs on Node 20[^]*?before upgrading it\./.exec(readme)?.[0] ?? "";
}

describe("authorize --secret-id and the AWS SDK's Node 20 notice (README, Requirements)", () => {
  let dir = "";
  tempDirPerTest("bridge-sdk-notice-", (made) => (dir = made));

  it("prints none when a setting checked before the SDK client is built stops the command, and README says so", async () => {
    const { code, stderr } = await spawnBridge(["authorize", "--secret-id", ARN], { ...noAws(dir) }, dir).outcome;
    expect(code, stderr).toBe(EXIT.usage);
    expect(stderr).toContain("QASHIO_BASE_URL");
    expect(stderr).not.toContain(NOTICE);
    // README must not promise the notice before those settings pass.
    expect(readmeOnNotice()).toMatch(/`NodeVersionSupportWarning`[^)]*once its settings pass/);
  });

  it("prints it once the client is built, before any AWS call: also when a secret name then leaves the region unknown", async () => {
    const env = { ...noAws(dir), QASHIO_BASE_URL: "https://api.example.com" };
    const { code, stderr } = await spawnBridge(["authorize", "--secret-id", "qashio-bridge-acme"], env, dir).outcome;
    expect(code, stderr).toBe(EXIT.usage);
    expect(stderr).toContain("AWS_REGION");
    expect(stderr.includes(NOTICE)).toBe(WARNED);
    expect(readmeOnNotice()).toMatch(/before any AWS call/);
  });
});
