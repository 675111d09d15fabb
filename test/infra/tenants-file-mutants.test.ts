/**
 * What a refusal of the tenants file on disk carries, that hand mutation found no test watching (see each test's mutant).
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TenantConfigError } from "../../infra/errors.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import { thrown } from "../thrown.js";

const dir = mkdtempSync(join(tmpdir(), "tenants-file-mutants-"));

function refusalOf(name: string, text: string): TenantConfigError {
  const path = join(dir, name);
  writeFileSync(path, text);
  return thrown(() => loadTenantsFile(path), TenantConfigError);
}

describe("tenants file: hand mutation found unwatched", () => {
  // Mutants: the error's field the last repeated key rather than the first the message names; a key given three times
  // named twice.
  it("names a key given three times once, and carries the first repeated key met as the error's field", () => {
    const text = '{"tenants": [{"id": "acme", "id": "acme", "id": "acme", "environment": "sandbox", "environment": "sandbox", "alarms": {"email": "a@b.test"}}]}';
    const error = refusalOf("thrice.json", text);
    expect(error.message).toBe(
      `tenants file ${join(dir, "thrice.json")}: field tenants[0].id is given more than once; field tenants[0].environment is given more than once: keep one of each (JSON keeps only the last)`,
    );
    expect(error.field).toBe("tenants[0].id");
  });

  // Mutant: the read failure thrown without its cause, so the stack of Node's own error was lost.
  it("keeps Node's error as the cause of a file it cannot read, and the parser's of a file that is no JSON", () => {
    const absent = thrown(() => loadTenantsFile(join(dir, "absent.json")), TenantConfigError);
    expect(absent.cause).toMatchObject({ code: "ENOENT" });
    expect(refusalOf("broken.json", "{ tenants: ").cause).toBeInstanceOf(SyntaxError);
  });
});
