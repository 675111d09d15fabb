import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { exampleStacks, REPO_ROOT } from "./helpers.js";
import type { PolicyStatement } from "./iam-evaluator.js";

const read = (...path: string[]): string => readFileSync(join(REPO_ROOT, ...path), "utf8");

/** The `- **<name>.**` bullet of docs/spec-gaps.md, up to the next top-level bullet or heading. */
function specGapsBullet(name: string): string {
  const bullet = new RegExp(String.raw`^- \*\*${name}\.\*\*[^]*?(?=\n- \*\*|\n#)`, "m").exec(read("docs", "spec-gaps.md"))?.[0];
  expect(bullet, name).toBeDefined();
  return bullet ?? "";
}

const actionsOf = (s: PolicyStatement): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);

describe("docs/spec-gaps.md's key use of the functions", () => {
  it("gives no function kms:Encrypt or kms:ReEncrypt, as neither the roles' policies nor the key policy do", () => {
    for (const { template } of Object.values(exampleStacks())) {
      const roleStatements = Object.values(template.findResources("AWS::IAM::Policy")).flatMap(
        (policy) => (policy as { Properties: { PolicyDocument: { Statement: PolicyStatement[] } } }).Properties.PolicyDocument.Statement,
      );
      expect(roleStatements.flatMap(actionsOf).filter((action) => /^kms:(Re)?Encrypt/.test(action))).toEqual([]);
      const key = Object.values(template.findResources("AWS::KMS::Key"))[0] as { Properties: { KeyPolicy: { Statement: PolicyStatement[] } } };
      const toRoles = key.Properties.KeyPolicy.Statement.filter((st) => JSON.stringify(st.Principal?.AWS ?? "").includes("Fn::GetAtt"));
      expect(toRoles).toEqual([]);
    }
    // The rotation's RotationSchedule is built on a keyless view of the secret (tenant-secret.ts), so CDK's grant of
    // Encrypt, ReEncrypt* and GenerateDataKey* to the rotation role is not made: the notes must not say it is.
    for (const name of ["Least privilege", "Encryption"]) {
      expect(specGapsBullet(name), name).not.toMatch(/[Rr]otation[^.]*\b(?:kms:)?(?:Re)?Encrypt\b/);
    }
    expect(specGapsBullet("Least privilege")).toMatch(/\*KMS\*[^.]*no role[^.]*`kms:Encrypt`/);
  });
});
