/**
 * The item keys docs/runbook.md gives an operator to read or delete by hand are the ones the code writes: a key that
 * drifted from shared/aws/keys.ts would read nothing, or delete nothing while the operator takes it as done (a PII
 * salt fingerprint left in place keeps refusing the new salt).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  accessTokenItemKey,
  leaseItemKey,
  leaseNames,
  LIVE_BY_TTL_INDEX,
  piiSaltItemKey,
  quarantineItemKey,
  quarantinePartition,
  revokedFamilyItemKey,
  snapshotItemKey,
  type ItemKey,
} from "../../shared/aws/keys.js";

const RUNBOOK = readFileSync(new URL("../../docs/runbook.md", import.meta.url), "utf8");

describe("the runbook's item keys are the table's", () => {
  it.each([
    ["PII salt fingerprint", piiSaltItemKey("<tenant>")],
    ["held access token", accessTokenItemKey("<tenant>")],
    ["revoked family marker", revokedFamilyItemKey("<tenant>")],
    ["token refresh lease", leaseItemKey(leaseNames.tokenRefresh("<tenant>"))],
  ])("names the %s item by its partition and sort key", (_, key: ItemKey) => {
    expect(RUNBOOK).toContain(`\`${key.pk}\` / \`${key.sk}\``);
  });

  it.each([
    ["PII salt fingerprint", piiSaltItemKey("$T")],
    ["quarantine record", quarantineItemKey("$T", "$R")],
    ["transaction snapshot", snapshotItemKey("$T", "transaction:<entityId>")],
  ])("hands the aws CLI the %s item's key", (_, key: ItemKey) => {
    expect(RUNBOOK).toContain(`{\\"pk\\":{\\"S\\":\\"${key.pk}\\"},\\"sk\\":{\\"S\\":\\"${key.sk}\\"}}`);
  });

  it("names the quarantine's partition and the index its size is counted on", () => {
    expect(RUNBOOK).toContain(`partition \`${quarantinePartition("<tenant>")}\``);
    expect(RUNBOOK).toContain(`index \`${LIVE_BY_TTL_INDEX}\``);
  });
});
