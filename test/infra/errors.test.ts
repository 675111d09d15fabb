import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { InfraError, TenantConfigError } from "../../infra/errors.js";
import { loadEventDetailSchemas } from "../../infra/event-schemas-source.js";
import { runbookUrlFrom } from "../../infra/runbook-link.js";
import { parseTenantsDocument } from "../../infra/tenants-document.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import { EVENT_TYPES } from "../../shared/bridge/events/index.js";
import { thrown } from "../thrown.js";

/** An event catalog with every type's file, the first one not JSON. */
function catalogWithBrokenFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "events-"));
  for (const type of EVENT_TYPES) writeFileSync(join(dir, `${type}.json`), type === EVENT_TYPES[0] ? "{ not json" : "{}");
  return dir;
}

describe("infra errors", () => {
  // What a stack trace or String(error) shows outside synth's one-line report (infra/app.ts prints the message only).
  it("are named by their class", () => {
    const dir = mkdtempSync(join(tmpdir(), "infra-errors-"));
    expect(String(thrown(() => runbookUrlFrom("docs/runbook.md")))).toMatch(/^InfraError: context runbookUrl: /);
    expect(String(thrown(() => loadTenantsFile(join(dir, "absent.json"))))).toMatch(/^TenantConfigError: tenants file /);
    expect(String(thrown(() => loadEventDetailSchemas(join(dir, "absent"))))).toMatch(/^EventSchemaError: event catalog /);
  });

  // infra/app.ts reports an InfraError in one line and lets any other error end synth with its stack trace.
  it("are InfraErrors, tenant config and event catalog ones included", () => {
    const dir = mkdtempSync(join(tmpdir(), "infra-errors-"));
    expect(thrown(() => loadTenantsFile(join(dir, "absent.json")))).toBeInstanceOf(InfraError);
    expect(thrown(() => loadEventDetailSchemas(join(dir, "absent")))).toBeInstanceOf(InfraError);
  });

  it("keep the failure they report as their cause", () => {
    const unreadable = thrown(() => loadTenantsFile(join(mkdtempSync(join(tmpdir(), "infra-errors-")), "absent.json")));
    expect((unreadable.cause as NodeJS.ErrnoException).code).toBe("ENOENT");
    expect(thrown(() => loadEventDetailSchemas(catalogWithBrokenFile())).cause).toBeInstanceOf(SyntaxError);
    // Two tenants at fault: one error naming both, caused by the first tenant's own error.
    const minimal = { environment: "sandbox", alarms: { email: "ops@acme.test" } };
    const both = thrown(() => parseTenantsDocument({ tenants: [{ ...minimal, id: "first", piiMode: "none" }, { ...minimal, id: "second", piiMode: "none" }] }));
    expect(both.cause).toBeInstanceOf(TenantConfigError);
    expect([(both.cause as TenantConfigError).tenant, (both.cause as TenantConfigError).field]).toEqual(["first", "piiMode"]);
  });
});
