/**
 * The tenants file as a document: its shape (`tenants` and `$schema`), the JSON Schema editors check it against, and
 * its validation into tenants, with messages naming the tenant and the field.
 */
import * as z from "zod";
import { TenantConfigError } from "./errors.js";
import { issueField } from "./field-path.js";
import { tenantClashes } from "./tenant-clashes.js";
import { parseTenantConfig, tenantSchema, type TenantConfig } from "./tenant-config.js";

/** What a tenants file holds, as messages show it. */
export const TENANTS_FILE_SHAPE = '{"tenants": [ ... ]}';

/** How a JSON value that is not an object reads in a message: "an array", "a string", "null". */
function jsonKindOf(value: unknown): string {
  if (value === null) return "null";
  return Array.isArray(value) ? "an array" : `a ${typeof value}`;
}

const tenantsFileSchema = z.strictObject(
  {
    $schema: z.string().optional().meta({ description: "Path or URL of this JSON Schema, for editors; ignored by synth" }),
    // Each tenant is parsed on its own, so a message names the tenant (parseTenantConfig).
    tenants: z.array(z.unknown(), { error: "must list the tenants (an array)" }).min(1, "list at least one tenant"),
  },
  // A bare list of tenants, copied without its wrapper, is the likely mistake.
  { error: (issue) => (issue.code === "invalid_type" ? `must be an object holding the tenants, ${TENANTS_FILE_SHAPE}; got ${jsonKindOf(issue.input)}` : undefined) },
);

/**
 * The whole tenants file as one zod schema, for its JSON Schema (docs/tenants.schema.json, rendered by
 * infra/tenants-json-schema.ts). Synth itself parses each tenant on its own (messages name the tenant), and also checks
 * what spans fields or tenants (ARNs against account and region, unique ids and webhook names, sources on a shared
 * bus), which the refinements hold and a JSON Schema leaves out.
 */
export function tenantsFileDocumentSchema(): z.ZodType {
  return tenantsFileSchema.extend({
    tenants: z.array(tenantSchema).min(1).meta({ description: "The tenants, one stack QashioBridge-<id> each" }),
  });
}

/**
 * Validates a whole tenants document: every tenant, unique ids, webhook names unique per tenant even once their dashes
 * are removed (CloudFormation's logical ids, which the runbook finds resources by, drop them), no event type sent twice
 * to one URL.
 *
 * @throws TenantConfigError naming the tenant and field (every tenant at fault, in one message).
 */
export function parseTenantsDocument(raw: unknown): TenantConfig[] {
  const file = tenantsFileSchema.safeParse(raw);
  if (!file.success) {
    // A misspelt `tenants` explains the missing one: named first.
    const issue = file.error.issues.find((i) => i.code === "unrecognized_keys") ?? file.error.issues[0];
    const field = issue ? issueField(issue) : "(root)";
    const message = issue?.code === "unrecognized_keys" ? 'is not a field of the tenants file, which holds "tenants" (and "$schema")' : (issue?.message ?? "invalid");
    throw new TenantConfigError(`tenants file: field ${field}: ${message}`, { field });
  }
  // Every tenant is checked before failing, and the checks across tenants run on those that passed, so one synth run
  // shows what to fix in all of them.
  const tenants: TenantConfig[] = [];
  const faults: TenantConfigError[] = [];
  file.data.tenants.forEach((entry, index) => {
    try {
      tenants.push(parseTenantConfig(entry, index));
    } catch (error) {
      if (!(error instanceof TenantConfigError)) throw error;
      faults.push(error);
    }
  });
  faults.push(...tenantClashes(tenants));
  const [first, ...more] = faults;
  if (first === undefined) return tenants;
  if (more.length === 0) throw first;
  throw new TenantConfigError(faults.map((f) => f.message).join("; "), { tenant: first.tenant, field: first.field }, { cause: first });
}
