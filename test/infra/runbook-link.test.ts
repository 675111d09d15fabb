import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { DEFAULT_RUNBOOK_URL, MAX_RUNBOOK_URL_LENGTH, runbookUrlFrom } from "../../infra/runbook-link.js";
import { InfraError } from "../../infra/errors.js";
import type { TenantStack } from "../../infra/tenant-stack.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import { buildTestApp, EXAMPLE_TENANTS_FILE, exampleStacks } from "./helpers.js";

const RUNBOOK = "https://git.example/qashio-bridge/blob/main/docs/runbook.md";

function descriptions(template: Template): string[] {
  return Object.values(template.findResources("AWS::CloudWatch::Alarm")).map(
    (alarm) => (alarm as { Properties: { AlarmDescription: string } }).Properties.AlarmDescription,
  );
}

/** The dashboard body as deployed (a Fn::Join of literals and tokens), joined with the tokens as placeholders. */
function dashboardBody(template: Template): string {
  const [dashboard] = Object.values(template.findResources("AWS::CloudWatch::Dashboard")) as { Properties: { DashboardBody: unknown } }[];
  const body = dashboard?.Properties.DashboardBody as { "Fn::Join": [string, unknown[]] } | string;
  return typeof body === "string" ? body : body["Fn::Join"][1].map((part) => (typeof part === "string" ? part : "<token>")).join("");
}

describe("runbookUrl (app context)", () => {
  it("links every alarm description and the dashboard to the absolute runbook URL when it is set", () => {
    for (const stack of buildTestApp({ runbookUrl: runbookUrlFrom(RUNBOOK) }).stacks as TenantStack[]) {
      const template = Template.fromStack(stack);
      const all = descriptions(template);
      expect(all.length).toBeGreaterThan(5);
      for (const description of all) {
        expect(description).toMatch(new RegExp(`Runbook: ${RUNBOOK.replaceAll(".", "\\.")}#[a-z-]+$`));
        expect(description.length).toBeLessThanOrEqual(1024);
      }
      expect(dashboardBody(template)).toContain(`Alarms and what to do: [docs/runbook.md](${RUNBOOK}).`);
    }
  });

  it("keeps the repository-relative path by default", () => {
    const { template } = exampleStacks().acme;
    for (const description of descriptions(template)) expect(description).toMatch(/Runbook: docs\/runbook\.md#[a-z-]+$/);
    expect(dashboardBody(template)).toContain("Alarms and what to do: docs/runbook.md.");
    expect(runbookUrlFrom(undefined)).toBe(DEFAULT_RUNBOOK_URL);
    expect(runbookUrlFrom("  ")).toBe(DEFAULT_RUNBOOK_URL);
  });

  it("keeps an alarm description of the longest URL accepted within CloudWatch's 1024 characters", () => {
    const long = `https://git.example/${"x".repeat(MAX_RUNBOOK_URL_LENGTH - "https://git.example/".length - "/runbook.md".length)}/runbook.md`;
    expect(runbookUrlFrom(long)).toHaveLength(MAX_RUNBOOK_URL_LENGTH);
    // The longest tenant id too: it is part of several descriptions.
    const tenants = loadTenantsFile(EXAMPLE_TENANTS_FILE).map((tenant) => ({ ...tenant, id: `${tenant.id.slice(0, 1)}${"x".repeat(31)}` }));
    for (const stack of buildTestApp({ tenants, runbookUrl: long }).stacks as TenantStack[]) {
      for (const description of descriptions(Template.fromStack(stack))) expect(description.length).toBeLessThanOrEqual(1024);
    }
    expect(() => runbookUrlFrom(`${long}x`)).toThrow(`must be at most ${MAX_RUNBOOK_URL_LENGTH} characters`);
  });

  it.each([
    ["http://git.example/docs/runbook.md", "must be an https:// URL"],
    ["docs/runbook.md", "is not an absolute URL"],
    ["https://git.example/docs/runbook.md#synclag", "must not have a #fragment"],
    // An empty fragment stays in href: every link would end `runbook.md##synclag`, an anchor no section has.
    ["https://git.example/docs/runbook.md#", "must not have a #fragment"],
    [42, "must be a string"],
  ])("refuses %s: %s", (value, problem) => {
    expect(() => runbookUrlFrom(value)).toThrow(InfraError);
    expect(() => runbookUrlFrom(value)).toThrow(`context runbookUrl: ${problem}`);
  });

  // A token alone before the @ (no password) is how a Git host's token is often pasted.
  it.each(["deploy:ghp_s3cr3t@", "ghp_s3cr3t@"])("refuses a URL carrying credentials (%s) without echoing them", (credentials) => {
    const error = (() => {
      try {
        runbookUrlFrom(`https://${credentials}git.example/qashio-bridge/blob/main/docs/runbook.md`);
      } catch (e) {
        return e as Error;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(InfraError);
    expect(error?.message).toContain("must not carry credentials");
    expect(error?.message).not.toContain("ghp_s3cr3t");
    expect(error?.message).not.toContain("deploy:");
  });

  // A Git host's raw link often carries its token in the query (GitLab's ?private_token=, GitHub's ?token=): written into
  // every alarm description and mail as it is, like user:password@, which is refused for that reason.
  it.each([
    ["?private_token=glpat-s3cr3t", "private_token"],
    ["?ref=main&token=ghp_s3cr3t", "token"],
    ["?X-Amz-Security-Token=s3cr3t", "X-Amz-Security-Token"],
    ["?access%5Ftoken=s3cr3t", "access_token"],
  ])("refuses a URL whose query carries a secret-looking parameter (%s), naming the parameter, not its value", (query, name) => {
    const error = (() => {
      try {
        runbookUrlFrom(`https://git.example/qashio-bridge/raw/main/docs/runbook.md${query}`);
      } catch (e) {
        return e as Error;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(InfraError);
    expect(error?.message).toContain(`must not carry a secret in its query (parameter ${name})`);
    expect(error?.message).not.toContain("s3cr3t");
  });

  it("keeps a query of parameters that are no secret, as a runbook page's address may need one", () => {
    expect(runbookUrlFrom("https://wiki.example/view?page=qashio-runbook&ref=main")).toBe("https://wiki.example/view?page=qashio-runbook&ref=main");
  });

  it("takes a null runbookUrl (cdk.json) as unset, and returns a set one as the URL parser writes it, spaces escaped", () => {
    expect(runbookUrlFrom(null)).toBe(DEFAULT_RUNBOOK_URL);
    // A raw space would end the link in an alarm mail.
    expect(runbookUrlFrom(" https://git.example/qashio bridge/docs/runbook.md ")).toBe("https://git.example/qashio%20bridge/docs/runbook.md");
  });
});
