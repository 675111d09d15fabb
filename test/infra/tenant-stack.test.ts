import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type CfnElement, Duration, Stack, Token } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import { RegionInfo } from "aws-cdk-lib/region-info";
import { beforeAll, describe, expect, it } from "vitest";
import { DASHBOARD_WIDGETS } from "../../infra/constructs/ops-dashboard.js";
import { TenantEventBus } from "../../infra/constructs/tenant-event-bus.js";
import { TABLE_ACCESS, tableGrants, TenantTable } from "../../infra/constructs/tenant-table.js";
import type { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { CorruptItemError, SecretStoreError } from "../../shared/aws/errors.js";
import { LIVE_BY_TTL_INDEX, partitionKeyPatterns, quarantinePartition, SECRET_TAGS } from "../../shared/aws/keys.js";
import { ProviderSecretClient } from "../../shared/aws/provider-secret.js";
import { EventBridgePublisher } from "../../shared/aws/event-publisher.js";
import type { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { DynamoQuarantine } from "../../shared/aws/quarantine.js";
import { isRedrivable, PUBLISH_FAILURE_PREFIX, recordQashioId } from "../../shared/bridge/redrive.js";
import { cardModeOf, pollActionOf, type PollEvent } from "../../shared/aws/poll-event.js";
import { MAX_WEBHOOKS_PER_TENANT, parseTenantConfig, type TenantConfig } from "../../infra/tenant-config.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import { EVENT_TYPES } from "../../infra/webhook-schema.js";
import { cycleBudgetMs, pollerTimeout, type TenantStack } from "../../infra/tenant-stack.js";
import { MIN_CYCLE_BUDGET_MS, MIN_POLLER_TIMEOUT_MS, MIN_ROTATION_TIMEOUT_MS, cycleDeadline, loadConfig } from "../../shared/aws/config.js";
import { buildTestApp, EXAMPLE_TENANTS_FILE, exampleStacks, REPO_ROOT, rolePolicies, roleStatements, testApp } from "./helpers.js";
import { allows, type PolicyStatement } from "./iam-evaluator.js";
import { DEPLOYED_TABLE_KEYS } from "../aws/support/dynamo.js";

let acme: TenantStack;
let globex: TenantStack;
let acmeT: Template;
let globexT: Template;

beforeAll(() => {
  ({
    acme: { stack: acme, template: acmeT },
    globex: { stack: globex, template: globexT },
  } = exampleStacks());
});

function statements(template: Template): PolicyStatement[] {
  return Object.values(template.findResources("AWS::IAM::Policy")).flatMap(
    (policy) => (policy as { Properties: { PolicyDocument: { Statement: PolicyStatement[] } } }).Properties.PolicyDocument.Statement,
  );
}
/** The documents that show aws CLI commands to run. */
const DOCS_WITH_AWS_COMMANDS = ["README.md", "docs/runbook.md", "docs/upgrading.md", "docs/local-mode.md"];
const actionsOf = (s: PolicyStatement): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const resourcesOf = (s: PolicyStatement): unknown[] => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]);
const logicalIdOf = (template: Template, type: string): string => {
  const ids = Object.keys(template.findResources(type));
  expect(ids).toHaveLength(1);
  return ids[0] as string;
};

/** The key policy statements whose principal is `service` (EventBridge unless said). */
const keyStatementsFor = (template: Template, service = "events.amazonaws.com"): PolicyStatement[] =>
  (Object.values(template.findResources("AWS::KMS::Key"))[0] as { Properties: { KeyPolicy: { Statement: PolicyStatement[] } } }).Properties.KeyPolicy.Statement.filter(
    (st) => st.Principal?.Service === service,
  );

describe("tenant stacks", () => {
  it("creates one stack per tenant, named QashioBridge-<tenant>", () => {
    expect([acme.stackName, globex.stackName]).toEqual(["QashioBridge-acme-sandbox", "QashioBridge-globex"]);
  });

  it("pins a tenant that configures ARNs to its account and region, and leaves one without any environment-agnostic", () => {
    expect([acme.account, acme.region]).toEqual(["111111111111", "eu-west-1"]);
    expect(Token.isUnresolved(globex.account) && Token.isUnresolved(globex.region)).toBe(true);
  });

  it("writes the same replacement-sensitive properties whether a tenant is pinned or not, so pinning a deployed one replaces nothing", () => {
    const sensitive: [string, string][] = [
      ["AWS::Events::Archive", "SourceArn"],
      ["AWS::Lambda::Permission", "SourceAccount"],
      ["AWS::Lambda::Permission", "FunctionName"],
      ["AWS::Events::EventBus", "Name"],
      ["AWS::Events::Rule", "EventBusName"],
    ];
    const propertiesOf = (template: Template) =>
      sensitive.map(([type, property]) =>
        Object.entries(template.findResources(type)).map(([id, r]) => [id, (r as { Properties: Record<string, unknown> }).Properties[property]]),
      );
    // The example holds one of each (acme pinned, globex not): each is compared with its other variant.
    const [acmeConfig, globexConfig] = loadTenantsFile(EXAMPLE_TENANTS_FILE) as [TenantConfig, TenantConfig];
    const { account: _account, region: _region, ...agnosticAcme } = acmeConfig;
    const pinnedGlobex = { ...globexConfig, account: "111111111111", region: "eu-west-1" };
    for (const [tenant, template] of [
      [agnosticAcme, acmeT],
      [pinnedGlobex, globexT],
    ] as const) {
      const [other] = buildTestApp({ tenants: [tenant] }).stacks;
      expect(propertiesOf(Template.fromStack(other!)), tenant.id).toEqual(propertiesOf(template));
    }
  });

  it("encrypts the table with the tenant key, on demand, with PITR, the ttl attribute and the keys-only index on pk/ttl", () => {
    acmeT.resourceCountIs("AWS::DynamoDB::Table", 1);
    acmeT.hasResourceProperties("AWS::DynamoDB::Table", {
      BillingMode: "PAY_PER_REQUEST",
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true, SSEType: "KMS", KMSMasterKeyId: { "Fn::GetAtt": [logicalIdOf(acmeT, "AWS::KMS::Key"), "Arn"] } },
      TimeToLiveSpecification: { AttributeName: "ttl", Enabled: true },
      // pk/sk, and the index the quarantine is counted on (QuarantineSize): keys only, sparse (items with a ttl), never a
      // record's body; the same definition DynamoDB Local tests create their tables with
      ...DEPLOYED_TABLE_KEYS,
      // what a failed first deploy leaves is the empty table, kept by deletion protection (and no delete of it by hand)
      DeletionProtectionEnabled: true,
    });
    acmeT.hasResourceProperties("AWS::KMS::Key", { EnableKeyRotation: true });
  });

  it("creates the secret empty but for a generated pii_salt, encrypted, with onboarding instructions", () => {
    acmeT.hasResourceProperties("AWS::SecretsManager::Secret", {
      KmsKeyId: { "Fn::GetAtt": [logicalIdOf(acmeT, "AWS::KMS::Key"), "Arn"] },
      // As README's onboarding says: credentials through authorize's environment, never a hand-written JSON.
      Description: Match.stringLikeRegexp("^qashio-bridge tenant acme-sandbox: provider OAuth credentials\\. .*authorize --secret-id <this ARN>\" with .*QASHIO_CLIENT_ID and QASHIO_CLIENT_SECRET in the environment.*Do not write this JSON by hand"),
      GenerateSecretString: {
        SecretStringTemplate: JSON.stringify({ client_id: "", client_secret: "", refresh_token: "" }),
        GenerateStringKey: "pii_salt",
      },
    });
  });

  it("tells, in the secret's description, that authorize signs in at the stack's ProviderBaseUrl, as README's onboarding does", () => {
    // Without it, a reader of the secret alone meets "QASHIO_BASE_URL: is required but not set" and may give another
    // deployment's URL, storing a refresh token the pollers cannot use.
    acmeT.hasResourceProperties("AWS::SecretsManager::Secret", {
      // mutant: the command's words changed ("npm run bridge -- xauthorize") went unseen
      Description: Match.stringLikeRegexp('Onboarding: run "npm run bridge -- authorize --secret-id <this ARN>" with QASHIO_BASE_URL set to the stack output ProviderBaseUrl'),
    });
    expect(readFileSync(join(REPO_ROOT, "README.md"), "utf8")).toContain("export QASHIO_BASE_URL=$(out ProviderBaseUrl)");
  });

  it("refuses DeleteSecret to every principal of the account: the secret holds the only copy of the live refresh token", () => {
    for (const template of [acmeT, globexT]) {
      template.hasResourceProperties("AWS::SecretsManager::ResourcePolicy", {
        SecretId: { Ref: logicalIdOf(template, "AWS::SecretsManager::Secret") },
        ResourcePolicy: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Effect: "Deny",
              Action: "secretsmanager:DeleteSecret",
              Principal: { AWS: Match.objectLike({ "Fn::Join": ["", Match.arrayWith([Match.stringLikeRegexp(":root$")])] }) },
            }),
          ]),
        },
      });
    }
  });

  it("tags the secret with its tenant and table, so authorize --secret-id writes under the pollers' token lease", () => {
    for (const [template, tenant] of [
      [acmeT, "acme-sandbox"],
      [globexT, "globex"],
    ] as const) {
      template.hasResourceProperties("AWS::SecretsManager::Secret", {
        // CDK renders tags sorted by key.
        Tags: Match.arrayWith([
          { Key: SECRET_TAGS.leaseTable, Value: { Ref: logicalIdOf(template, "AWS::DynamoDB::Table") } },
          { Key: SECRET_TAGS.tenant, Value: tenant },
        ]),
      });
    }
  });

  it("outputs the provider base URL the pollers use, for onboarding to sign in at the same deployment", () => {
    for (const [template, url] of [
      [acmeT, "https://api.sandbox.provider.test"],
      [globexT, "https://api.provider.test"],
    ] as const) {
      template.hasOutput("ProviderBaseUrl", { Value: url });
      const pollers = Object.values(template.findResources("AWS::Lambda::Function")) as {
        Properties: { Environment: { Variables: Record<string, unknown> } };
      }[];
      for (const fn of pollers) expect(fn.Properties.Environment.Variables.QASHIO_BASE_URL).toBe(url);
      // The console shows the SecretArn output's description beside it: the whole command, base URL included.
      // mutant: QASHIO_BASE_URL dropped from it went unseen
      template.hasOutput("SecretArn", {
        Description: "Onboarding (README step 3): QASHIO_BASE_URL=<ProviderBaseUrl output> npm run bridge -- authorize --secret-id <this ARN>",
      });
    }
  });

  it("warns at synth about a region this aws-cdk-lib does not know, and about a placeholder provider URL", () => {
    const globex = loadTenantsFile(EXAMPLE_TENANTS_FILE).find((t) => t.id === "globex") as TenantConfig;
    const warningsFor = (region: string, urls?: Record<string, string>): string[] => {
      const [stack] = buildTestApp({ tenants: [{ ...globex, region }], ...(urls ? { providerUrls: urls } : {}) }).stacks as [TenantStack];
      return Annotations.fromStack(stack)
        .findWarning("*", Match.anyValue())
        .map((w) => String(w.entry.data));
    };
    const typo = warningsFor("eu-west-9", { production: "https://api.qashio.real" });
    expect(typo).toEqual([expect.stringContaining("region eu-west-9 is not one this aws-cdk-lib knows: check it for a typo")]);
    expect(warningsFor("eu-west-1", { production: "https://api.qashio.real" })).toEqual([]);
    expect(warningsFor("me-central-1")).toEqual([
      expect.stringContaining("provider URL https://api.provider.test is a placeholder: set the real one (QASHIO_*_URL or cdk context qashioUrls)"),
    ]);
    // A literal URL is the tenant's own: the environment variables and cdk.json do not set it.
    const [literal] = buildTestApp({ tenants: [{ ...globex, environment: "https://api.acme.example" }] }).stacks as [TenantStack];
    expect(Annotations.fromStack(literal).findWarning("*", Match.anyValue()).map((w) => String(w.entry.data))).toEqual([
      expect.stringContaining("provider URL https://api.acme.example is a placeholder: set the real one (the tenant's environment field) before deploying"),
    ]);
  });

  it("rotates the token daily at a fixed hour, within one hour, through rotate-token, not on deploy", () => {
    acmeT.hasResourceProperties("AWS::SecretsManager::RotationSchedule", {
      RotationLambdaARN: { "Fn::GetAtt": [Match.stringLikeRegexp("^RotateTokenFunction"), "Arn"] },
      RotationRules: Match.objectEquals({ ScheduleExpression: "cron(0 3 * * ? *)", Duration: "1h" }),
      RotateImmediatelyOnUpdate: false,
    });
  });

  it("runs three nodejs24.x arm64 functions with the contract's environment", () => {
    const functions = acmeT.findResources("AWS::Lambda::Function");
    expect(Object.keys(functions)).toHaveLength(3);
    for (const fn of Object.values(functions) as { Properties: Record<string, unknown> }[]) {
      expect(fn.Properties).toMatchObject({ Runtime: "nodejs24.x", Architectures: ["arm64"], TracingConfig: { Mode: "Active" } });
    }
    acmeT.hasResourceProperties("AWS::Lambda::Function", {
      Description: Match.stringLikeRegexp("transactions"),
      Environment: {
        Variables: {
          TENANT_ID: "acme-sandbox",
          QASHIO_BASE_URL: "https://api.sandbox.provider.test",
          TABLE_NAME: { Ref: logicalIdOf(acmeT, "AWS::DynamoDB::Table") },
          SECRET_ID: { Ref: logicalIdOf(acmeT, "AWS::SecretsManager::Secret") },
          EVENT_BUS_NAME: { Ref: logicalIdOf(acmeT, "AWS::Events::EventBus") },
          EVENT_SOURCE: "qashio.bridge",
          PII_MODE: "hash",
          EMIT_CARD_CREATED: "true",
          CARD_DETAILS: "true",
          CYCLE_BUDGET_MS: "270000",
          POWERTOOLS_SERVICE_NAME: "qashio-bridge",
          POWERTOOLS_METRICS_NAMESPACE: "QashioBridge",
        },
      },
    });
    globexT.hasResourceProperties("AWS::Lambda::Function", {
      Description: Match.stringLikeRegexp("cards"),
      Environment: { Variables: Match.objectLike({ EVENT_BUS_NAME: "globex-finance", PII_MODE: "redact", EMIT_CARD_CREATED: "false", CARD_DETAILS: "false" }) },
    });
  });

  it("writes only an environment its functions' cold start accepts, resolved as CloudFormation would, for every kind of tenant and partition", () => {
    const example = loadTenantsFile(EXAMPLE_TENANTS_FILE);
    const tenants: TenantConfig[] = [
      ...example,
      // Imported by ARN, in China and GovCloud: their partitions' ARNs; and an id at the tenants file's longest.
      parseTenantConfig({ id: "initech", environment: "eu", account: "123456789012", region: "cn-north-1", piiMode: "full", eventBus: { mode: "import", arn: "arn:aws-cn:events:cn-north-1:123456789012:event-bus/initech.finance-1" }, alarms: { email: "ops@initech.test" } }),
      parseTenantConfig({ id: "umbrella", environment: "https://api.umbrella.example", account: "210987654321", region: "us-gov-west-1", eventSource: "Umbrella.Qashio_Bridge-2", eventBus: { mode: "import", arn: "arn:aws-us-gov:events:us-gov-west-1:210987654321:event-bus/shared_bus" }, alarms: { email: "ops@umbrella.test" } }),
      parseTenantConfig({ id: "a".repeat(32), environment: "sandbox", eventBus: { mode: "create" }, alarms: { email: "ops@a.test" } }),
    ];
    const stacks = buildTestApp({ tenants }).stacks as TenantStack[];
    const checked: string[] = [];
    for (const stack of stacks) {
      const tenant = tenants.find((t) => stack.stackName === `QashioBridge-${t.id}`) as TenantConfig;
      // An environment-agnostic stack deployed in China: the partition and region of the pseudo parameters.
      const [region, account] = [tenant.region ?? "cn-northwest-1", tenant.account ?? "999999999999"];
      const partition = RegionInfo.get(region).partition as string;
      const resources = Template.fromStack(stack).toJSON().Resources as Record<string, { Type: string; Properties?: Record<string, unknown> }>;
      // What Ref gives for the resources an environment names: CloudFormation's generated names, the secret's ARN with its suffix.
      const refOf = (id: string): string => {
        const type = resources[id]?.Type;
        if (type === "AWS::DynamoDB::Table") return `${stack.stackName}-${id}-1A2B3C4D5E6F`;
        if (type === "AWS::SecretsManager::Secret") return `arn:${partition}:secretsmanager:${region}:${account}:secret:${id}-a1B2c3D4e5F6-AbC_1=`;
        if (type === "AWS::Events::EventBus") return (resources[id]?.Properties?.Name as string | undefined) ?? `${stack.stackName}-${id}-1A2B3C4D5E6F`;
        const pseudo: Record<string, string> = { "AWS::Partition": partition, "AWS::Region": region, "AWS::AccountId": account, "AWS::URLSuffix": "amazonaws.com" };
        const value = pseudo[id];
        if (value === undefined) throw new Error(`no resolved value for Ref ${id} (${type ?? "unknown"})`);
        return value;
      };
      const resolve = (value: unknown): string => {
        if (typeof value === "string") return value;
        const intrinsic = value as Record<string, unknown>;
        if (typeof intrinsic.Ref === "string") return refOf(intrinsic.Ref);
        if (Array.isArray(intrinsic["Fn::Join"])) {
          const [separator, parts] = intrinsic["Fn::Join"] as [string, unknown[]];
          return parts.map(resolve).join(separator);
        }
        throw new Error(`no resolved value for ${JSON.stringify(value)}`);
      };
      for (const [id, fn] of Object.entries(resources).filter(([, r]) => r.Type === "AWS::Lambda::Function")) {
        const variables = (fn.Properties?.Environment as { Variables: Record<string, unknown> }).Variables;
        const env = Object.fromEntries(Object.entries(variables).map(([name, value]) => [name, resolve(value)]));
        expect(() => loadConfig(env), `${stack.stackName} ${id}: ${JSON.stringify(env)}`).not.toThrow();
        expect(loadConfig(env)).toMatchObject({ tenant: tenant.id, eventSource: tenant.eventSource, piiMode: tenant.piiMode });
        checked.push(`${stack.stackName}/${id}`);
      }
    }
    // Three functions in each of the five stacks.
    expect(checked).toHaveLength(15);
  });

  it("reserves one concurrent execution per poller and sends failed async invocations to the encrypted DLQ", () => {
    const reserved = Object.values(acmeT.findResources("AWS::Lambda::Function"))
      .map((fn) => (fn as { Properties: { ReservedConcurrentExecutions?: number; Description: string } }).Properties)
      .filter((p) => p.ReservedConcurrentExecutions === 1)
      .map((p) => p.Description);
    expect(reserved).toHaveLength(2);
    expect(reserved.every((d) => /transactions|cards/.test(d))).toBe(true);
    acmeT.resourcePropertiesCountIs(
      "AWS::Lambda::EventInvokeConfig",
      {
        MaximumRetryAttempts: 0,
        DestinationConfig: { OnFailure: { Destination: { "Fn::GetAtt": [Match.stringLikeRegexp("^PollerDeadLetters"), "Arn"] } } },
      },
      2,
    );
  });

  it("encrypts every queue with the tenant key and the alarm topic it creates", () => {
    const key = { "Fn::GetAtt": [logicalIdOf(globexT, "AWS::KMS::Key"), "Arn"] };
    for (const queue of Object.values(acmeT.findResources("AWS::SQS::Queue"))) {
      expect((queue as { Properties: { KmsMasterKeyId: unknown } }).Properties.KmsMasterKeyId).toEqual({
        "Fn::GetAtt": [logicalIdOf(acmeT, "AWS::KMS::Key"), "Arn"],
      });
      // a data key reused for an hour: a burst of dead letters makes few KMS calls
      expect((queue as { Properties: { KmsDataKeyReusePeriodSeconds: unknown } }).Properties.KmsDataKeyReusePeriodSeconds).toBe(3600);
    }
    // the sender name of the notification emails says which tenant's alarms they are
    globexT.hasResourceProperties("AWS::SNS::Topic", { KmsMasterKeyId: key, DisplayName: "qashio-bridge globex alarms" });
    globexT.hasResourceProperties("AWS::SNS::Subscription", { Protocol: "email", Endpoint: "finance-ops@globex.example" });
    acmeT.resourceCountIs("AWS::SNS::Topic", 0);
  });

  it("lets this tenant's CloudWatch alarms publish to the alarm topic the stack creates, whose SSL-only policy replaces SNS's default one", () => {
    const policies = Object.values(globexT.findResources("AWS::SNS::TopicPolicy")) as { Properties: { PolicyDocument: { Statement: Record<string, unknown>[] } } }[];
    expect(policies).toHaveLength(1);
    const statements = policies[0]!.Properties.PolicyDocument.Statement;
    expect(statements.map((s) => [s.Sid, s.Effect])).toEqual([
      ["AllowPublishThroughSSLOnly", "Deny"],
      ["AllowCloudWatchAlarmsToPublish", "Allow"],
    ]);
    const allow = statements[1]!;
    expect(allow).toMatchObject({ Principal: { Service: "cloudwatch.amazonaws.com" }, Action: "sns:Publish", Resource: { Ref: logicalIdOf(globexT, "AWS::SNS::Topic") } });
    // only for alarms of the stack's own account (globex is environment-agnostic: the pseudo parameter)
    expect(allow.Condition).toMatchObject({ StringEquals: { "aws:SourceAccount": { Ref: "AWS::AccountId" } } });
    // Exactly the stack's alarms, each by its ARN: no name pattern, which would also match a tenant "globex-eu".
    const condition = allow.Condition as { ArnEquals?: { "aws:SourceArn": unknown[] }; ArnLike?: unknown };
    expect(condition.ArnLike).toBeUndefined();
    const granted = condition.ArnEquals!["aws:SourceArn"].map((arn) => {
      const text = JSON.stringify(arn);
      expect(text).not.toContain("*");
      return /:alarm:([^"]+)"/.exec(text)?.[1];
    });
    const alarmNames = Object.values(globexT.findResources("AWS::CloudWatch::Alarm")).map((a) => (a as { Properties: { AlarmName: string } }).Properties.AlarmName);
    expect(alarmNames.length).toBeGreaterThan(5);
    expect(granted.sort()).toEqual(alarmNames.sort());
    acmeT.resourceCountIs("AWS::SNS::TopicPolicy", 0);
  });

  it("lets CloudWatch use the key for the alarm topic the stack creates, and only then (a tenant's own topic has its own key)", () => {
    const cloudWatchStatements = (template: Template) => keyStatementsFor(template, "cloudwatch.amazonaws.com");
    expect(cloudWatchStatements(globexT)).toEqual([
      expect.objectContaining({ Sid: "AllowCloudWatchAlarmsToPublishToEncryptedTopic", Action: ["kms:Decrypt", "kms:GenerateDataKey*"] }),
    ]);
    expect(cloudWatchStatements(acmeT)).toEqual([]);
    // AWS documents no source key in CloudWatch's calls to KMS for an encrypted topic (its statement has no condition):
    // a call without aws:SourceAccount is let through, one naming another account is not.
    const env = { partition: "aws", region: "us-east-2", account: "333333333333" };
    for (const action of ["kms:Decrypt", "kms:GenerateDataKey"]) {
      const allowed = (context: Record<string, string>) => allows(cloudWatchStatements(globexT), { action, context, env });
      expect(allowed({}), `${action} without aws:SourceAccount`).toBe(true);
      expect(allowed({ "aws:SourceAccount": env.account }), `${action} for the stack's account`).toBe(true);
      expect(allowed({ "aws:SourceAccount": "999999999999" }), `${action} for another account`).toBe(false);
    }
  });

  it("schedules each poller at the tenant's rate through EventBridge Scheduler, with the DLQ", () => {
    acmeT.hasResourceProperties("AWS::Scheduler::Schedule", {
      ScheduleExpression: "rate(5 minutes)",
      GroupName: "qashio-bridge-acme-sandbox",
      Target: Match.objectLike({ Arn: { "Fn::GetAtt": [Match.stringLikeRegexp("^PollTransactionsFunction"), "Arn"] }, DeadLetterConfig: Match.anyValue() }),
    });
    acmeT.hasResourceProperties("AWS::Scheduler::Schedule", {
      ScheduleExpression: "rate(15 minutes)",
      Target: Match.objectLike({ Arn: { "Fn::GetAtt": [Match.stringLikeRegexp("^PollCardsFunction"), "Arn"] } }),
    });
    globexT.hasResourceProperties("AWS::Scheduler::Schedule", { ScheduleExpression: "rate(2 minutes)" });
    globexT.hasResourceProperties("AWS::Scheduler::Schedule", { ScheduleExpression: "rate(30 minutes)" });
    // an operator pausing one poller in the console tells the schedules apart by their descriptions
    const descriptions = Object.values(globexT.findResources("AWS::Scheduler::Schedule")).map((sc) => (sc as { Properties: { Description: string } }).Properties.Description);
    expect(descriptions.sort()).toEqual(["qashio-bridge globex: poll cards every 30 min", "qashio-bridge globex: poll transactions every 2 min"]);
    // named as the runbook names them (list-schedules, get-schedule --name), not as CloudFormation would shorten a
    // generated `<stack>-<logical id>-<suffix>`, which a long tenant id could cut before "Cards"
    const names = (template: Template) => Object.values(template.findResources("AWS::Scheduler::Schedule")).map((sc) => (sc as { Properties: { Name: string } }).Properties.Name);
    expect(names(globexT).sort()).toEqual(["Cards", "Transactions"]);
    expect(names(acmeT).sort()).toEqual(["Cards", "Transactions"]);
    // a missed tick is made up by the next one: a few retries within one schedule period, then the DLQ
    for (const [template, transactions, cards] of [
      [acmeT, 300, 900],
      [globexT, 120, 1800],
    ] as const) {
      const policies = Object.values(template.findResources("AWS::Scheduler::Schedule")).map(
        (sc) => (sc as { Properties: { ScheduleExpression: string; Target: { RetryPolicy: unknown } } }).Properties,
      );
      expect(policies.map((p) => [p.ScheduleExpression, p.Target.RetryPolicy]).sort()).toEqual(
        [
          [`rate(${transactions / 60} minutes)`, { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: transactions }],
          [`rate(${cards / 60} minutes)`, { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: cards }],
        ].sort(),
      );
    }
    // only EventBridge Scheduler acting for the stack's own account, for the tenant's schedule group, may take the role
    // that invokes the pollers. AWS's Scheduler guide gives aws:SourceArn as the schedule group's ARN (an earlier
    // edition as a schedule's): either of this group
    const arn = (env: readonly unknown[], resource: string) => ({
      "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ...(env.length === 1 ? [`:scheduler:${env[0] as string}:${resource}`] : [":scheduler:", ...env, `:${resource}`])]],
    });
    for (const [template, account, env] of [
      [acmeT, "111111111111", ["eu-west-1:111111111111"]],
      [globexT, { Ref: "AWS::AccountId" }, [{ Ref: "AWS::Region" }, ":", { Ref: "AWS::AccountId" }]],
    ] as const) {
      const tenant = template === acmeT ? "acme-sandbox" : "globex";
      template.hasResourceProperties("AWS::IAM::Role", {
        Description: Match.stringLikeRegexp("EventBridge Scheduler invoking the pollers"),
        AssumeRolePolicyDocument: {
          Statement: [
            {
              Action: "sts:AssumeRole",
              Effect: "Allow",
              Principal: { Service: "scheduler.amazonaws.com" },
              Condition: {
                StringEquals: { "aws:SourceAccount": account },
                ArnLike: {
                  "aws:SourceArn": [arn(env, `schedule-group/qashio-bridge-${tenant}`), arn(env, `schedule/qashio-bridge-${tenant}/*`)],
                },
              },
            },
          ],
        },
      });
    }
  });

  it("sends each poller exactly its scheduled cycle's input: a transaction cycle, and the full card walk", () => {
    // no action (an operator's redrive or conform-pii run on every tick) and no mode (suspended-only would never walk
    // every card): the pollers read anything else in it as a different invocation, or fail it
    for (const [template, tenant] of [
      [acmeT, "acme-sandbox"],
      [globexT, "globex"],
    ] as const) {
      const inputs = Object.values(template.findResources("AWS::Scheduler::Schedule")).map((sc) => {
        const { Arn, Input } = (sc as { Properties: { Target: { Arn: { "Fn::GetAtt": [string, string] }; Input: string } } }).Properties.Target;
        return [Arn["Fn::GetAtt"][0].replace(/Function[0-9A-F]{8}$/, ""), JSON.parse(Input) as PollEvent] as const;
      });
      expect(Object.fromEntries(inputs)).toEqual({
        PollTransactions: { kind: "transactions", tenant, scheduledTime: "<aws.scheduler.scheduled-time>" },
        PollCards: { kind: "cards", tenant, scheduledTime: "<aws.scheduler.scheduled-time>" },
      });
      for (const [fn, input] of inputs) {
        expect(pollActionOf(input, fn === "PollCards" ? "cards" : "transactions")).toBe("cycle");
        if (fn === "PollCards") expect(cardModeOf(input)).toBe("full");
      }
    }
  });

  it("schedules the card poller's suspended-only fast path, only for a tenant that sets suspendedCardsEveryMinutes", () => {
    const globexConfig = loadTenantsFile(EXAMPLE_TENANTS_FILE)[1] as TenantConfig;
    const schedulesOf = (template: Template) =>
      Object.values(template.findResources("AWS::Scheduler::Schedule")).map(
        (sc) =>
          (sc as {
            Properties: {
              ScheduleExpression: string;
              State: string;
              GroupName: unknown;
              Name: string;
              Description: string;
              Target: { Arn: { "Fn::GetAtt": [string, string] }; Input: string; RetryPolicy: unknown; DeadLetterConfig: unknown; RoleArn: unknown };
            };
          }).Properties,
      );
    // none without the setting: the example tenants keep their two schedules
    for (const template of [acmeT, globexT]) expect(schedulesOf(template).filter((sc) => sc.Target.Input.includes("suspended-only"))).toEqual([]);
    for (const enabled of [true, false]) {
      const fast = { ...globexConfig, schedules: { ...globexConfig.schedules, enabled, suspendedCardsEveryMinutes: 1 } };
      const [stack] = buildTestApp({ tenants: [fast] }).stacks as [TenantStack];
      const schedules = schedulesOf(Template.fromStack(stack));
      expect(schedules).toHaveLength(3);
      const fastPath = schedules.find((sc) => sc.Target.Input.includes("suspended-only"));
      if (fastPath === undefined) throw new Error("no fast-path schedule");
      const full = schedules.find((sc) => sc !== fastPath && sc.Target.Arn["Fn::GetAtt"][0].startsWith("PollCardsFunction"));
      expect(fastPath).toMatchObject({
        ScheduleExpression: "rate(1 minute)",
        State: enabled ? "ENABLED" : "DISABLED",
        GroupName: full?.GroupName,
        Name: "SuspendedCards",
        Description: "qashio-bridge globex: poll suspended cards every 1 min",
      });
      expect(fastPath.Target.Arn).toEqual(full?.Target.Arn);
      // the same delivery as the full walk's, but for its own period: a missed tick is made up by the next one
      expect(fastPath.Target).toMatchObject({ RoleArn: full?.Target.RoleArn, DeadLetterConfig: full?.Target.DeadLetterConfig });
      expect(fastPath.Target.RetryPolicy).toEqual({ MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 60 });
      // the card schedule's input plus the mode: still a cycle, of the suspended list only
      const input = JSON.parse(fastPath.Target.Input) as PollEvent;
      expect(input).toEqual({ kind: "cards", tenant: "globex", scheduledTime: "<aws.scheduler.scheduled-time>", mode: "suspended-only" });
      expect(pollActionOf(input, "cards")).toBe("cycle");
      expect(cardModeOf(input)).toBe("suspended-only");
      expect(cardModeOf(JSON.parse(full?.Target.Input ?? "null") as PollEvent)).toBe("full");
    }
  });

  it("lets a card tick outwait a whole full walk when the fast path runs beside it, so meeting one does not dead-letter it", () => {
    // Lambda runs one card invocation at a time: a fast-path tick meeting a running walk is throttled and retried by
    // Lambda, up to 5 minutes apart, until its maximum age. It must outlive the walk (the timeout) plus one such wait.
    const acmeConfig = loadTenantsFile(EXAMPLE_TENANTS_FILE)[0] as TenantConfig;
    const ageOf = (cardsEveryMinutes: number, suspendedCardsEveryMinutes?: number) => {
      const schedules = { ...acmeConfig.schedules, transactionsEveryMinutes: 5, cardsEveryMinutes, ...(suspendedCardsEveryMinutes === undefined ? {} : { suspendedCardsEveryMinutes }) };
      const [stack] = buildTestApp({ tenants: [{ ...acmeConfig, schedules }] }).stacks as [TenantStack];
      const configs = Template.fromStack(stack).findResources("AWS::Lambda::EventInvokeConfig") as Record<string, { Properties: { FunctionName: { Ref: string }; MaximumEventAgeInSeconds: number } }>;
      const ages = Object.values(configs).map((c) => [c.Properties.FunctionName.Ref.replace(/Function[0-9A-F]{8}$/, ""), c.Properties.MaximumEventAgeInSeconds]);
      return Object.fromEntries(ages) as Record<string, number>;
    };
    expect(ageOf(5)).toEqual({ PollTransactions: 300, PollCards: 300 });
    expect(ageOf(5, 1)).toEqual({ PollTransactions: 300, PollCards: 600 });
    expect(ageOf(2, 1)).toEqual({ PollTransactions: 300, PollCards: 420 });
    // a schedule period already covers it: unchanged
    expect(ageOf(15, 2)).toEqual({ PollTransactions: 300, PollCards: 900 });
  });

  it("creates the schedules enabled, or disabled when the tenant's schedules.enabled is false (a tenant not yet onboarded)", () => {
    for (const template of [acmeT, globexT]) template.resourcePropertiesCountIs("AWS::Scheduler::Schedule", { State: "ENABLED" }, 2);
    const globexConfig = loadTenantsFile(EXAMPLE_TENANTS_FILE)[1] as TenantConfig;
    const pending = { ...globexConfig, schedules: { ...globexConfig.schedules, enabled: false } };
    const [stack] = buildTestApp({ tenants: [pending] }).stacks as [TenantStack];
    const template = Template.fromStack(stack);
    template.resourceCountIs("AWS::Scheduler::Schedule", 2);
    template.resourcePropertiesCountIs("AWS::Scheduler::Schedule", { State: "DISABLED", ScheduleExpression: "rate(2 minutes)" }, 1);
    template.resourcePropertiesCountIs("AWS::Scheduler::Schedule", { State: "DISABLED", ScheduleExpression: "rate(30 minutes)" }, 1);
    // no tick on purpose: the heartbeat alarms (`Heartbeat` the transaction poller's) still show it, but page no one
    // until the schedules are enabled
    const heartbeats = (t: Template) =>
      Object.values(t.findResources("AWS::CloudWatch::Alarm"))
        .map((a) => (a as { Properties: { AlarmName: string; ActionsEnabled?: boolean } }).Properties)
        .filter((p) => /-Heartbeat(-|$)/.test(p.AlarmName))
        .map((p) => [p.AlarmName.replace(/^.*-Heartbeat-?/, "") || "PollTransactions", p.ActionsEnabled ?? true]);
    expect(heartbeats(template).sort()).toEqual([
      ["PollCards", false],
      ["PollTransactions", false],
    ]);
    expect(heartbeats(globexT).sort()).toEqual([
      ["PollCards", true],
      ["PollTransactions", true],
    ]);
  });

  it("lets a poller run for its schedule period, within one to five minutes, its cycle budget the timeout less 30 s", () => {
    const pollers = (template: Template) =>
      Object.values(template.findResources("AWS::Lambda::Function"))
        .map((fn) => (fn as { Properties: { Description: string; Timeout: number; Environment: { Variables: Record<string, unknown> } } }).Properties)
        .filter((p) => /transactions|cards/.test(p.Description))
        .map((p) => [/transactions/.test(p.Description) ? "transactions" : "cards", p.Timeout, p.Environment.Variables["CYCLE_BUDGET_MS"]]);
    // acme every 5 and 15 minutes, globex every 2 and 30: a cycle normally ends before the next tick
    expect(pollers(acmeT).sort()).toEqual([
      ["cards", 300, "270000"],
      ["transactions", 300, "270000"],
    ]);
    // runbook: the deadline is "the function timeout less 30 s"
    expect(pollers(globexT).sort()).toEqual([
      ["cards", 300, "270000"],
      ["transactions", 120, "90000"],
    ]);
    // The one-minute floor: a tenant polling every minute still gets a minute, its budget the same 30 s less
    const acmeConfig = loadTenantsFile(EXAMPLE_TENANTS_FILE)[0] as TenantConfig;
    const everyMinute = { ...acmeConfig, schedules: { ...acmeConfig.schedules, transactionsEveryMinutes: 1, cardsEveryMinutes: 1 } };
    const [stack] = buildTestApp({ tenants: [everyMinute] }).stacks as [TenantStack];
    expect(pollers(Template.fromStack(stack)).sort()).toEqual([
      ["cards", 60, "30000"],
      ["transactions", 60, "30000"],
    ]);
  });

  it("never gives a poller a cycle budget, nor a timeout, too short to refresh the token, on any schedule the tenants file accepts", () => {
    const env = { TENANT_ID: "acme", QASHIO_BASE_URL: "https://api.example.com", TABLE_NAME: "table", SECRET_ID: "s", EVENT_BUS_NAME: "b", PII_MODE: "redact" };
    // Every rate the tenants file takes: whole minutes from 1 to 1440 (tenant-config.ts).
    for (let everyMinutes = 1; everyMinutes <= 1440; everyMinutes += 1) {
      const timeout = pollerTimeout(everyMinutes);
      const budget = cycleBudgetMs(timeout);
      expect(budget).toBeGreaterThanOrEqual(MIN_CYCLE_BUDGET_MS);
      expect(loadConfig({ ...env, CYCLE_BUDGET_MS: String(budget) }).cycleBudgetMs).toBe(budget);
      // The timeout itself leaves the cycle that much once the runtime's safety margin is kept back.
      expect(cycleDeadline(0, timeout.toMilliseconds(), budget)).toBeGreaterThanOrEqual(MIN_CYCLE_BUDGET_MS);
    }
    // Whatever the timeout, even one shorter than any poller gets.
    for (const seconds of [0, 1, 15, 45, 59]) expect(cycleBudgetMs(Duration.seconds(seconds))).toBe(MIN_CYCLE_BUDGET_MS);
  });

  it("never synthesizes a function whose Lambda timeout it refuses itself: pollers MIN_POLLER_TIMEOUT_MS, the rotation MIN_ROTATION_TIMEOUT_MS", () => {
    // The example stacks, and the shortest schedule the tenants file takes (the pollers' one-minute floor).
    const acmeConfig = loadTenantsFile(EXAMPLE_TENANTS_FILE)[0] as TenantConfig;
    const everyMinute = { ...acmeConfig, schedules: { ...acmeConfig.schedules, transactionsEveryMinutes: 1, cardsEveryMinutes: 1 } };
    const [fastest] = buildTestApp({ tenants: [everyMinute] }).stacks as [TenantStack];
    for (const stack of [acme, globex, fastest]) {
      const functions = Template.fromStack(stack).findResources("AWS::Lambda::Function") as Record<
        string,
        { Properties: { Timeout: number; Environment?: { Variables?: Record<string, unknown> } } }
      >;
      const idOf = (fn: TenantStack["rotateToken"]) => stack.getLogicalId(fn.function.node.defaultChild as CfnElement);
      const pollers = [stack.pollTransactions, stack.pollCards];
      // Every function set up as a poller (CYCLE_BUDGET_MS, which only pollers read) is one of those checked here.
      const withBudget = Object.keys(functions).filter((id) => functions[id]?.Properties.Environment?.Variables?.["CYCLE_BUDGET_MS"] !== undefined);
      expect(withBudget.sort()).toEqual(pollers.map(idOf).sort());
      for (const poller of pollers) expect(functions[idOf(poller)]?.Properties.Timeout).toBeGreaterThanOrEqual(MIN_POLLER_TIMEOUT_MS / 1000);
      expect(functions[idOf(stack.rotateToken)]?.Properties.Timeout).toBeGreaterThanOrEqual(MIN_ROTATION_TIMEOUT_MS / 1000);
    }
  });

  it("lets a tick wait one schedule period behind a running cycle, at most Lambda's 6 hours", () => {
    acmeT.resourcePropertiesCountIs("AWS::Lambda::EventInvokeConfig", { MaximumEventAgeInSeconds: 300 }, 1);
    const acmeConfig = loadTenantsFile(EXAMPLE_TENANTS_FILE)[0] as TenantConfig;
    const daily = { ...acmeConfig, schedules: { ...acmeConfig.schedules, transactionsEveryMinutes: 1440, cardsEveryMinutes: 420 } };
    const [stack] = buildTestApp({ tenants: [daily] }).stacks as [TenantStack];
    Template.fromStack(stack).resourcePropertiesCountIs("AWS::Lambda::EventInvokeConfig", { MaximumEventAgeInSeconds: 21_600 }, 2);
  });

  it("creates the bus only when asked and archives the tenant's events on it", () => {
    acmeT.hasResourceProperties("AWS::Events::EventBus", { Name: "qashio-bridge-acme-sandbox" });
    acmeT.hasResourceProperties("AWS::Events::Archive", {
      EventPattern: { source: ["qashio.bridge"], detail: { tenant: ["acme-sandbox"] } },
      RetentionDays: 14,
    });
    globexT.resourceCountIs("AWS::Events::EventBus", 0);
    globexT.hasResourceProperties("AWS::Events::Archive", {
      SourceArn: Match.objectLike({ "Fn::Join": ["", Match.arrayWith([":event-bus/globex-finance"])] }),
      EventPattern: { source: ["qashio.bridge"], detail: { tenant: ["globex"] } },
      // README: archiveRetentionDays "default 30, 0 = forever"
      RetentionDays: 30,
    });
    const forever = { ...(loadTenantsFile(EXAMPLE_TENANTS_FILE)[1] as TenantConfig), archiveRetentionDays: 0 };
    Template.fromStack(buildTestApp({ tenants: [forever] }).stacks[0]!).hasResourceProperties("AWS::Events::Archive", {
      EventPattern: { source: ["qashio.bridge"], detail: { tenant: ["globex"] } },
      // 0: EventBridge keeps the events indefinitely
      RetentionDays: 0,
    });
  });

  it("has the functions publish to a bus imported by ARN by its whole ARN, which names its account, not by its bare name", () => {
    const arn = "arn:aws:events:eu-west-1:123456789012:event-bus/initech-bus";
    const tenant = parseTenantConfig({ id: "initech", environment: "eu", account: "123456789012", region: "eu-west-1", eventBus: { mode: "import", arn }, alarms: { email: "ops@initech.test" } });
    const template = Template.fromStack(buildTestApp({ tenants: [tenant] }).stacks[0] as TenantStack);
    const functions = Object.values(template.findResources("AWS::Lambda::Function")) as { Properties: { Environment?: { Variables?: Record<string, unknown> } } }[];
    const busNames = functions.map((f) => f.Properties.Environment?.Variables?.["EVENT_BUS_NAME"]).filter((name) => name !== undefined);
    expect(busNames).toEqual([arn, arn, arn]);
    template.hasOutput("EventBusName", { Value: arn });
  });

  it("keeps the archive's events 30 days when a TenantEventBus is given no retention, its documented default", () => {
    const stack = new Stack(testApp(), "Bus");
    const encryptionKey = new kms.Key(stack, "Key");
    new TenantEventBus(stack, "EventBus", { tenantId: "acme", bus: { mode: "import", name: "shared" }, eventSource: "qashio.bridge", encryptionKey });
    Template.fromStack(stack).hasResourceProperties("AWS::Events::Archive", { RetentionDays: 30 });
  });

  it("encrypts a created bus and every archive with the tenant key, EventBridge's key use bound to the buses of the account", () => {
    const key = (template: Template) => ({ "Fn::GetAtt": [logicalIdOf(template, "AWS::KMS::Key"), "Arn"] });
    acmeT.hasResourceProperties("AWS::Events::EventBus", { KmsKeyIdentifier: key(acmeT) });
    // pinned (acme) or not (globex), the pattern is built from the pseudo parameters: pinning does not rewrite it
    const busesOfTheAccount = {
      "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":events:", { Ref: "AWS::Region" }, ":", { Ref: "AWS::AccountId" }, ":event-bus/*"]],
    };
    for (const template of [acmeT, globexT]) {
      template.hasResourceProperties("AWS::Events::Archive", { KmsKeyIdentifier: key(template) });
      const events = keyStatementsFor(template);
      expect(events).toContainEqual({
        Sid: "AllowEventBridgeToEncryptTheAccountsBusesAndArchives",
        Effect: "Allow",
        Principal: { Service: "events.amazonaws.com" },
        Action: ["kms:Decrypt", "kms:GenerateDataKey", "kms:ReEncrypt*"],
        Resource: "*",
        Condition: {
          StringEqualsIfExists: { "aws:SourceAccount": { Ref: "AWS::AccountId" } },
          ArnLike: { "kms:EncryptionContext:aws:events:event-bus:arn": busesOfTheAccount },
        },
      });
      // every data-key use by EventBridge is bound to the account (bus ARNs of the account, or for the DLQs the source
      // account); none to one bus (CDK's statement for EventBus's kmsKey, which a change of eventBus would rewrite)
      for (const st of events.filter((e) => [e.Action].flat().some((a) => a !== "kms:DescribeKey"))) {
        expect(Object.keys(st.Condition ?? {}), JSON.stringify(st)).not.toHaveLength(0);
      }
      expect(JSON.stringify(events)).not.toContain("aws:SourceArn");
    }
  });

  it("still lets EventBridge use the key for the old bus and its kept archive after an eventBus change, so a replay from it works", () => {
    const [acmeConfig, globexConfig] = loadTenantsFile(EXAMPLE_TENANTS_FILE) as [TenantConfig, TenantConfig];
    const cases = [
      // create -> import by name: the created bus and its archive are kept under the key (RetainExceptOnCreate)
      { tenant: acmeConfig, before: acmeT, change: { mode: "import", name: "shared-bus" }, oldBus: "qashio-bridge-acme-sandbox", account: "111111111111", region: "eu-west-1" },
      // import -> create, environment-agnostic: the archive on the imported bus is kept under the key
      { tenant: globexConfig, before: globexT, change: { mode: "create" }, oldBus: "globex-finance", account: "333333333333", region: "us-east-2" },
    ] as const;
    for (const { tenant, before, change, oldBus, account, region } of cases) {
      const env = { partition: "aws", region, account };
      const oldBusArn = `arn:aws:events:${region}:${account}:event-bus/${oldBus}`;
      const [afterStack] = buildTestApp({ tenants: [{ ...tenant, eventBus: change }] }).stacks as [TenantStack];
      const after = Template.fromStack(afterStack);
      // the change does move the archive (a new one on the new bus; the old one kept)
      expect(JSON.stringify(after.findResources("AWS::Events::Archive"))).not.toContain(`event-bus/${oldBus}`);
      for (const [when, template] of [["before", before], ["after", after]] as const) {
        const allowed = (action: string, context: Record<string, string>) => allows(keyStatementsFor(template), { action, context, env });
        // the old bus: a replay publishes on it, EventBridge encrypts and matches its events (with the bus's context)
        for (const action of ["kms:GenerateDataKey", "kms:Decrypt"]) {
          const busCall = { "aws:SourceAccount": account, "aws:SourceArn": oldBusArn, "kms:EncryptionContext:aws:events:event-bus:arn": oldBusArn };
          expect(allowed(action, busCall), `${tenant.id} ${when}: ${action} on the old bus`).toBe(true);
        }
        // the old archive: a replay decrypts it; AWS's example for archives grants these actions on the context alone
        for (const action of ["kms:GenerateDataKey", "kms:Decrypt", "kms:ReEncryptFrom", "kms:ReEncryptTo"]) {
          expect(allowed(action, { "kms:EncryptionContext:aws:events:event-bus:arn": oldBusArn }), `${tenant.id} ${when}: ${action} on the old archive`).toBe(true);
        }
        // never for a bus of another account
        const foreign = `arn:aws:events:${region}:999999999999:event-bus/${oldBus}`;
        expect(allowed("kms:Decrypt", { "kms:EncryptionContext:aws:events:event-bus:arn": foreign }), `${tenant.id} ${when}: another account`).toBe(false);
      }
    }
  });

  it("gives a created bus a dead-letter queue under the tenant key, which only that bus may send to", () => {
    const queue = Object.keys(acmeT.findResources("AWS::SQS::Queue")).filter((id) => id.startsWith("EventBusDeadLetters"));
    expect(queue).toHaveLength(1);
    const queueArn = { "Fn::GetAtt": [queue[0], "Arn"] };
    // events the bus accepted but could not encrypt or decrypt (a disabled key, a key policy without the grant)
    acmeT.hasResourceProperties("AWS::Events::EventBus", { Name: "qashio-bridge-acme-sandbox", DeadLetterConfig: { Arn: queueArn } });
    acmeT.hasResourceProperties("AWS::SQS::Queue", {
      KmsMasterKeyId: { "Fn::GetAtt": [logicalIdOf(acmeT, "AWS::KMS::Key"), "Arn"] },
      MessageRetentionPeriod: 14 * 24 * 3600,
    });
    acmeT.hasResourceProperties("AWS::SQS::QueuePolicy", {
      Queues: [{ Ref: queue[0] }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          {
            Sid: "AllowTheBusToSendDeadLetters",
            Effect: "Allow",
            Principal: { Service: "events.amazonaws.com" },
            Action: "sqs:SendMessage",
            Resource: queueArn,
            Condition: { ArnEquals: { "aws:SourceArn": { "Fn::GetAtt": [logicalIdOf(acmeT, "AWS::Events::EventBus"), "Arn"] } } },
          },
        ]),
      },
    });
    // EventBridge may write to a queue under the key (for the bus's DLQ as for the webhooks')
    expect(keyStatementsFor(acmeT)).toContainEqual(
      expect.objectContaining({ Sid: "AllowEventBridgeToWriteEncryptedDeadLetters", Action: ["kms:Decrypt", "kms:GenerateDataKey"] }),
    );
    // an imported bus is its owner's: no DLQ is set on it
    expect(Object.keys(globexT.findResources("AWS::SQS::Queue")).filter((id) => id.startsWith("EventBus"))).toEqual([]);
  });

  it("lets EventBridge write encrypted dead letters only for calls naming the stack's account, and describe the key, nothing more", () => {
    for (const [template, account] of [
      [acmeT, "111111111111"],
      [globexT, "333333333333"],
    ] as const) {
      const statements = keyStatementsFor(template);
      // the buses-and-archives statement is pinned above; these are the other two EventBridge gets
      expect(statements.filter((st) => st.Sid !== "AllowEventBridgeToEncryptTheAccountsBusesAndArchives")).toEqual([
        {
          Sid: "AllowEventBridgeToWriteEncryptedDeadLetters",
          Effect: "Allow",
          Principal: { Service: "events.amazonaws.com" },
          Action: ["kms:Decrypt", "kms:GenerateDataKey"],
          Resource: "*",
          Condition: { StringEquals: { "aws:SourceAccount": template === acmeT ? account : { Ref: "AWS::AccountId" } } },
        },
        { Sid: "AllowEventBridgeToDescribeTheKey", Effect: "Allow", Principal: { Service: "events.amazonaws.com" }, Action: "kms:DescribeKey", Resource: "*" },
      ]);
      // a dead-letter write (no bus in its encryption context) must name the account: not another, nor none
      const env = { partition: "aws", region: "eu-west-1", account };
      const deadLetterWrite = (context: Record<string, string>) => allows(statements, { action: "kms:GenerateDataKey", context, env });
      expect(deadLetterWrite({ "aws:SourceAccount": account })).toBe(true);
      expect(deadLetterWrite({ "aws:SourceAccount": "999999999999" })).toBe(false);
      expect(deadLetterWrite({})).toBe(false);
    }
  });

  it("names the key by the alias the runbook's commands use: alias/qashio-bridge/<tenant>", () => {
    expect(readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8")).toContain("--key-id alias/qashio-bridge/$T ");
    for (const [template, tenant] of [
      [acmeT, "acme-sandbox"],
      [globexT, "globex"],
    ] as const) {
      template.resourcePropertiesCountIs("AWS::KMS::Alias", { AliasName: `alias/qashio-bridge/${tenant}`, TargetKeyId: { "Fn::GetAtt": [logicalIdOf(template, "AWS::KMS::Key"), "Arn"] } }, 1);
    }
  });

  it("encrypts the functions' log groups with the tenant key, CloudWatch Logs' use bound to log groups of the account", () => {
    const logsIn = (template: Template) =>
      template === acmeT
        ? { service: { "Fn::Join": ["", ["logs.eu-west-1.", { Ref: "AWS::URLSuffix" }]] }, arn: { "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":logs:eu-west-1:111111111111:log-group:*"]] } }
        : {
            service: { "Fn::Join": ["", ["logs.", { Ref: "AWS::Region" }, ".", { Ref: "AWS::URLSuffix" }]] },
            arn: { "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":logs:", { Ref: "AWS::Region" }, ":", { Ref: "AWS::AccountId" }, ":log-group:*"]] },
          };
    for (const template of [acmeT, globexT]) {
      const groups = Object.values(template.findResources("AWS::Logs::LogGroup")) as { Properties: { KmsKeyId?: unknown } }[];
      expect(groups).toHaveLength(3);
      for (const group of groups) expect(group.Properties.KmsKeyId).toEqual({ "Fn::GetAtt": [logicalIdOf(template, "AWS::KMS::Key"), "Arn"] });
      // docs/spec-gaps.md: the log groups keep 3 months
      for (const group of groups) expect(group.Properties).toMatchObject({ RetentionInDays: 90 });
      const key = Object.values(template.findResources("AWS::KMS::Key"))[0] as { Properties: { KeyPolicy: { Statement: unknown[] } } };
      expect(key.Properties.KeyPolicy.Statement).toContainEqual({
        Sid: "AllowCloudWatchLogsToEncryptLogGroups",
        Effect: "Allow",
        Principal: { Service: logsIn(template).service },
        Action: ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
        Resource: "*",
        Condition: { ArnLike: { "kms:EncryptionContext:aws:logs:arn": logsIn(template).arn } },
      });
    }
  });

  it("names CloudWatch Logs by its regional principal in the partition's domain: logs.<region>.amazonaws.com.cn in China", () => {
    // aws-cdk-lib's region table (region-info Default.servicePrincipal: logs is `logs.<region>.<domain suffix>` in
    // every partition) and Terraform's aws_service_principal (`logs.cn-north-1.amazonaws.com.cn` in AWS China)
    const [, globex] = loadTenantsFile(EXAMPLE_TENANTS_FILE) as [TenantConfig, TenantConfig];
    /** A principal as CloudFormation resolves it where the pseudo parameters have these values. */
    const deployed = (value: unknown, pseudo: Record<string, string>): string => {
      if (typeof value === "string") return value;
      const { Ref, "Fn::Join": join } = value as { Ref?: string; "Fn::Join"?: [string, unknown[]] };
      if (Ref !== undefined && Ref in pseudo) return pseudo[Ref] as string;
      if (join !== undefined) return join[1].map((part) => deployed(part, pseudo)).join(join[0]);
      throw new Error(`cannot resolve ${JSON.stringify(value)}`);
    };
    const logsPrincipal = (tenant: TenantConfig): unknown => {
      const template = Template.fromStack(buildTestApp({ tenants: [tenant] }).stacks[0] as TenantStack);
      const key = Object.values(template.findResources("AWS::KMS::Key"))[0] as { Properties: { KeyPolicy: { Statement: PolicyStatement[] } } };
      return key.Properties.KeyPolicy.Statement.find((st) => st.Sid === "AllowCloudWatchLogsToEncryptLogGroups")?.Principal?.Service;
    };
    for (const [region, suffix] of [
      ["cn-north-1", "amazonaws.com.cn"],
      ["cn-northwest-1", "amazonaws.com.cn"],
      ["us-gov-west-1", "amazonaws.com"],
      ["eu-west-1", "amazonaws.com"],
    ] as const) {
      const pseudo = { "AWS::Region": region, "AWS::URLSuffix": suffix };
      // pinned to the region, and environment-agnostic deployed there
      expect(deployed(logsPrincipal({ ...globex, account: "111111111111", region }), pseudo)).toBe(`logs.${region}.${suffix}`);
      expect(deployed(logsPrincipal(globex), pseudo)).toBe(`logs.${region}.${suffix}`);
    }
  });

  it("registers a JSONSchemaDraft4 schema per event type in the tenant's registry", () => {
    acmeT.hasResourceProperties("AWS::EventSchemas::Registry", { RegistryName: "qashio-bridge-acme-sandbox" });
    const schemas = Object.values(acmeT.findResources("AWS::EventSchemas::Schema")).map(
      (s) => (s as { Properties: { RegistryName: unknown; SchemaName: string; Type: string; Description: string; Content: string } }).Properties,
    );
    expect(schemas.map((s) => s.SchemaName).sort()).toEqual(EVENT_TYPES.map((t) => `qashio.bridge@${t}`).sort());
    // by the registry's attribute, not its name: CloudFormation creates the registry before the schemas it holds
    const registry = { "Fn::GetAtt": [logicalIdOf(acmeT, "AWS::EventSchemas::Registry"), "RegistryName"] };
    for (const schema of schemas) {
      expect(schema.RegistryName).toEqual(registry);
      expect(schema.Type).toBe("JSONSchemaDraft4");
      // a consumer browsing the registry reads which event type a schema describes
      expect(schema.Description).toBe(`qashio-bridge ${schema.SchemaName.slice("qashio.bridge@".length)} event`);
      const content = JSON.parse(schema.Content) as { $schema: string; properties: Record<string, unknown> };
      expect(content.$schema).toBe("http://json-schema.org/draft-04/schema#");
      expect(content.properties.detail).toBeDefined();
      expect(schema.Content).not.toMatch(/"\$defs"|"const"|draft\/2020-12/);
    }
  });

  it("keeps the registry's description within the 256 characters Schemas accepts, for the longest id and source the tenants file allows", () => {
    const descriptionOf = (template: Template): string =>
      (Object.values(template.findResources("AWS::EventSchemas::Registry"))[0] as { Properties: { Description: string } }).Properties.Description;
    expect(descriptionOf(acmeT)).toBe("Events published by qashio-bridge for tenant acme-sandbox (source qashio.bridge)");
    const id = "a".repeat(32);
    const descriptionFor = (eventSource: string): string => {
      const tenant = parseTenantConfig({ id, environment: "sandbox", eventSource, alarms: { email: "ops@acme.test" } });
      const [stack] = buildTestApp({ tenants: [tenant] }).stacks;
      return descriptionOf(Template.fromStack(stack!));
    };
    // Schema-valid (id of 32, source of 256 characters), but CreateRegistry refuses a description over 256 at deploy.
    const description = descriptionFor("s".repeat(256));
    expect(description.length).toBeLessThanOrEqual(256);
    expect(description).toContain(`tenant ${id}`);
    // the source is named while the description fits: exactly 256 characters with a source of 169, none from 170
    const fitting = descriptionFor("s".repeat(169));
    expect(fitting).toBe(`Events published by qashio-bridge for tenant ${id} (source ${"s".repeat(169)})`);
    expect(fitting).toHaveLength(256);
    expect(descriptionFor("s".repeat(170))).toBe(`Events published by qashio-bridge for tenant ${id}`);
  });

  it("forwards each webhook's event types through a rule, connection, API destination, retry policy and DLQ", () => {
    acmeT.resourceCountIs("AWS::Events::Rule", 2);
    acmeT.hasResourceProperties("AWS::Events::Rule", {
      EventBusName: { Ref: logicalIdOf(acmeT, "AWS::Events::EventBus") },
      EventPattern: {
        source: ["qashio.bridge"],
        "detail-type": ["transaction.created", "transaction.changed"],
        detail: { tenant: ["acme-sandbox"] },
      },
      Targets: [
        Match.objectLike({
          Arn: { "Fn::GetAtt": [Match.stringLikeRegexp("^WebhookerpDestination"), "Arn"] },
          RetryPolicy: { MaximumRetryAttempts: 24, MaximumEventAgeInSeconds: 86400 },
          DeadLetterConfig: { Arn: { "Fn::GetAtt": [Match.stringLikeRegexp("^WebhookerpDeadLetters"), "Arn"] } },
        }),
      ],
    });
    acmeT.hasResourceProperties("AWS::Events::ApiDestination", {
      InvocationEndpoint: "https://erp.acme.example/hooks/qashio",
      HttpMethod: "POST",
      InvocationRateLimitPerSecond: 10,
    });
    acmeT.hasResourceProperties("AWS::Events::Connection", { AuthorizationType: "API_KEY" });
    acmeT.hasResourceProperties("AWS::Events::Connection", {
      AuthorizationType: "OAUTH_CLIENT_CREDENTIALS",
      AuthParameters: { OAuthParameters: Match.objectLike({ AuthorizationEndpoint: "https://auth.acme.example/oauth2/token" }) },
    });
    globexT.resourceCountIs("AWS::Events::Rule", 0);
  });

  it("lets EventBridge take a webhook's delivery role only for a rule of the tenant's bus in the stack's account, to invoke that destination alone", () => {
    // AWS's confused deputy guidance for EventBridge: for event bus rule targets aws:SourceArn is the rule's ARN. The
    // rule itself cannot be named (its ARN in the role's trust would be a dependency cycle): any rule of the bus.
    const [acme, globex] = loadTenantsFile(EXAMPLE_TENANTS_FILE) as [TenantConfig, TenantConfig];
    const onDefault = Template.fromStack(
      buildTestApp({ tenants: [{ ...globex, eventBus: { mode: "import" as const, name: "default" }, webhooks: acme.webhooks.slice(0, 1) }] }).stacks[0] as TenantStack,
    );
    const onNamed = Template.fromStack(buildTestApp({ tenants: [{ ...globex, webhooks: acme.webhooks.slice(0, 1) }] }).stacks[0] as TenantStack);
    const anyAccountRule = (rule: unknown[]) => ({ "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":events:", { Ref: "AWS::Region" }, ":", { Ref: "AWS::AccountId" }, ...rule]] });
    for (const [template, hook, account, rules] of [
      [acmeT, "erp", "111111111111", { "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":events:eu-west-1:111111111111:rule/", { Ref: logicalIdOf(acmeT, "AWS::Events::EventBus") }, "/*"]] }],
      [acmeT, "cardsaudit", "111111111111", { "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":events:eu-west-1:111111111111:rule/", { Ref: logicalIdOf(acmeT, "AWS::Events::EventBus") }, "/*"]] }],
      [onNamed, "erp", { Ref: "AWS::AccountId" }, anyAccountRule([":rule/globex-finance/*"])],
      // a rule of the default bus has no bus in its ARN
      [onDefault, "erp", { Ref: "AWS::AccountId" }, anyAccountRule([":rule/*"])],
    ] as const) {
      const rule = Object.values(template.findResources("AWS::Events::Rule")).find((r) =>
        JSON.stringify(r).includes(`"Webhook${hook}Destination`),
      ) as { Properties: { Targets: { Arn: unknown; RoleArn: { "Fn::GetAtt": [string, string] } }[] } };
      const [target] = rule.Properties.Targets;
      const roleId = target!.RoleArn["Fn::GetAtt"][0];
      const role = template.toJSON()["Resources"][roleId] as { Properties: { AssumeRolePolicyDocument: { Statement: PolicyStatement[] } } };
      expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
        {
          Action: "sts:AssumeRole",
          Effect: "Allow",
          Principal: { Service: "events.amazonaws.com" },
          Condition: { StringEquals: { "aws:SourceAccount": account }, ArnLike: { "aws:SourceArn": rules } },
        },
      ]);
      expect(roleStatements(template, roleId)).toEqual([
        { Action: "events:InvokeApiDestination", Effect: "Allow", Resource: target!.Arn },
      ]);
    }
  });

  it("points a webhook's rule at its delivery role only once the role's policy exists: EventBridge sends a delivery refused for permissions to the DLQ, untried", () => {
    for (const hook of ["erp", "cardsaudit"]) {
      const [id, rule] = Object.entries(acmeT.findResources("AWS::Events::Rule")).find(([, r]) => JSON.stringify(r).includes(`"Webhook${hook}Destination`)) as [
        string,
        { DependsOn?: string[]; Properties: { Targets: { RoleArn: { "Fn::GetAtt": [string, string] } }[] } },
      ];
      const roleId = rule.Properties.Targets[0]!.RoleArn["Fn::GetAtt"][0];
      const policies = rolePolicies(acmeT, roleId).map((p) => p.id);
      expect(policies, id).toHaveLength(1);
      expect(rule.DependsOn ?? [], id).toEqual(expect.arrayContaining(policies));
    }
  });

  it("takes each webhook's retries and maximum event age from its tenants file entry", () => {
    const tenant = loadTenantsFile(EXAMPLE_TENANTS_FILE).find((t) => t.id === "acme-sandbox") as TenantConfig;
    const [erp, ...others] = tenant.webhooks;
    const webhooks = [{ ...(erp as TenantConfig["webhooks"][number]), retryAttempts: 3, maxEventAgeHours: 2 }, ...others];
    const template = Template.fromStack(buildTestApp({ tenants: [{ ...tenant, webhooks }] }).stacks[0] as TenantStack);
    template.hasResourceProperties("AWS::Events::Rule", {
      Targets: [
        Match.objectLike({
          Arn: { "Fn::GetAtt": [Match.stringLikeRegexp("^WebhookerpDestination"), "Arn"] },
          RetryPolicy: { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 7200 },
        }),
      ],
    });
  });

  it("asks the OAuth token endpoint for the webhook's scope with the client credentials grant", () => {
    acmeT.hasResourceProperties("AWS::Events::Connection", {
      AuthorizationType: "OAUTH_CLIENT_CREDENTIALS",
      AuthParameters: {
        OAuthParameters: Match.objectLike({
          HttpMethod: "POST",
          OAuthHttpParameters: {
            BodyParameters: Match.arrayWith([
              Match.objectLike({ Key: "grant_type", Value: "client_credentials" }),
              Match.objectLike({ Key: "scope", Value: "events:write" }),
            ]),
          },
        }),
      },
    });
  });

  it("keeps webhook credentials out of the template: only Secrets Manager dynamic references", () => {
    const connections = JSON.stringify(acmeT.findResources("AWS::Events::Connection"));
    expect(connections).toContain("{{resolve:secretsmanager:arn:aws:secretsmanager:eu-west-1:111111111111:secret:acme/erp-webhook-AbCdEf:SecretString:api_key::}}");
    expect(connections).toContain("{{resolve:secretsmanager:arn:aws:secretsmanager:eu-west-1:111111111111:secret:acme/audit-oauth-GhIjKl:SecretString:client_secret::}}");
  });

  it("sends a webhook's API key under its own header name, and basic credentials as its user name and secret password", () => {
    const tenant = loadTenantsFile(EXAMPLE_TENANTS_FILE)[0] as TenantConfig;
    const erp = tenant.webhooks[0] as TenantConfig["webhooks"][number];
    const keyArn = "arn:aws:secretsmanager:eu-west-1:111111111111:secret:acme/keyed-AbCdEf";
    const passwordArn = "arn:aws:secretsmanager:eu-west-1:111111111111:secret:acme/basic-GhIjKl";
    const webhooks = [
      // the whole secret string when no JSON field is named
      { ...erp, name: "keyed", auth: { type: "apiKey" as const, headerName: "X-Acme-Token", value: { secretArn: keyArn } } },
      { ...erp, name: "basic", auth: { type: "basic" as const, username: "bridge-user", password: { secretArn: passwordArn, jsonField: "password" } } },
    ];
    const template = Template.fromStack(buildTestApp({ tenants: [{ ...tenant, webhooks }] }).stacks[0] as TenantStack);
    const authOf = (type: string) =>
      (Object.values(template.findResources("AWS::Events::Connection", { Properties: { AuthorizationType: type } })) as { Properties: { AuthParameters: unknown } }[]).map(
        (c) => c.Properties.AuthParameters,
      );
    expect(authOf("API_KEY")).toEqual([{ ApiKeyAuthParameters: { ApiKeyName: "X-Acme-Token", ApiKeyValue: `{{resolve:secretsmanager:${keyArn}:SecretString:::}}` } }]);
    expect(authOf("BASIC")).toEqual([{ BasicAuthParameters: { Username: "bridge-user", Password: `{{resolve:secretsmanager:${passwordArn}:SecretString:password::}}` } }]);
  });
});

/** Logical id -> "DeletionPolicy/UpdateReplacePolicy" of every resource that is not simply deleted with the stack. */
function keptResources(template: Template): Record<string, string> {
  const resources = template.toJSON()["Resources"] as Record<string, { DeletionPolicy?: string; UpdateReplacePolicy?: string }>;
  const kept: Record<string, string> = {};
  for (const [id, resource] of Object.entries(resources)) {
    const policies = `${resource.DeletionPolicy ?? "Delete"}/${resource.UpdateReplacePolicy ?? "Delete"}`;
    if (policies !== "Delete/Delete") kept[id] = policies;
  }
  return kept;
}

describe("stack size", () => {
  it("a tenant with every feature and the most webhooks the config takes stays under CloudFormation's 500 resources", () => {
    const acme = loadTenantsFile(EXAMPLE_TENANTS_FILE)[0]!;
    const webhooks = Array.from({ length: MAX_WEBHOOKS_PER_TENANT }, (_, i) => ({ ...acme.webhooks[1]!, name: `hook-${i}` }));
    const [stack] = buildTestApp({ tenants: [{ ...acme, webhooks }] }).stacks as [TenantStack];
    const resources = Object.keys(Template.fromStack(stack).toJSON()["Resources"] as object).length;
    expect(resources).toBeGreaterThan(MAX_WEBHOOKS_PER_TENANT * 8);
    expect(resources).toBeLessThanOrEqual(500);
  });

  it("keeps each function role's inline policies within IAM's 10,240 characters, for the longest tenant id and long ARNs", () => {
    // A role's inline policies count together, whitespace aside, with the ARNs CloudFormation resolves (here 200
    // characters each, more than a generated name of the longest stack gives).
    const acme = loadTenantsFile(EXAMPLE_TENANTS_FILE)[0]!;
    const [stack] = buildTestApp({ tenants: [{ ...acme, id: "t".repeat(32) }] }).stacks as [TenantStack];
    const template = Template.fromStack(stack);
    const resolved = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(resolved);
      if (typeof value !== "object" || value === null) return value;
      const [[key, argument]] = Object.entries(value) as [[string, unknown]];
      if (key === "Fn::Join") return (argument as [string, unknown[]])[1].map((part) => (typeof part === "string" ? part : "a".repeat(200))).join("");
      if (key.startsWith("Fn::") || key === "Ref") return "a".repeat(200);
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolved(v)]));
    };
    for (const role of ["PollTransactionsRole", "PollCardsRole", "RotateTokenRole"]) {
      const size = rolePolicies(template, role).reduce((sum, p) => sum + JSON.stringify({ Version: "2012-10-17", Statement: resolved(p.statements) }).length, 0);
      expect(size, role).toBeGreaterThan(1_000);
      expect(size, role).toBeLessThanOrEqual(10_240);
    }
  });
});

describe("what a stack delete or a failed first create leaves", () => {
  // RetainExceptOnCreate: kept on update and delete, removed when the create that made it rolls back.
  const kept = {
    Key9BCD29C7: "RetainExceptOnCreate/Retain",
    SecretA29EB826: "RetainExceptOnCreate/Retain",
    PollerDeadLettersQueue213A9CE4: "RetainExceptOnCreate/Retain",
    // the replay source, also kept when a new bus source replaces it
    EventBusArchive52248A77: "RetainExceptOnCreate/Retain",
    // deletion protection would refuse the rollback's DeleteTable: always retained (its name is generated)
    Table710B521B: "Retain/Retain",
  };

  it("retains the stateful resources, under the logical ids deployed stacks have, and removes them when their first create rolls back", () => {
    expect(keptResources(globexT)).toEqual(kept);
    expect(keptResources(acmeT)).toEqual({
      ...kept,
      // a created bus stays with its archive (replays go to it; a bus with rules cannot be deleted)
      EventBusEEC924FB: "RetainExceptOnCreate/Retain",
      // its DLQ and the policy letting it send there stay with it (a replay from the kept archive goes to that bus)
      EventBusDeadLettersQueueB0775C00: "RetainExceptOnCreate/Retain",
      EventBusDeadLettersQueuePolicyC531AFBD: "RetainExceptOnCreate/Retain",
      WebhookerpDeadLettersQueue6628A433: "RetainExceptOnCreate/Retain",
      WebhookcardsauditDeadLettersQueue5B8FADEB: "RetainExceptOnCreate/Retain",
    });
  });

  it("pins the logical ids of the key, table, secret and archive: a new id would orphan the deployed resource and start an empty one", () => {
    for (const template of [acmeT, globexT]) {
      expect(logicalIdOf(template, "AWS::KMS::Key")).toBe("Key9BCD29C7");
      expect(logicalIdOf(template, "AWS::DynamoDB::Table")).toBe("Table710B521B");
      expect(logicalIdOf(template, "AWS::SecretsManager::Secret")).toBe("SecretA29EB826");
      expect(logicalIdOf(template, "AWS::Events::Archive")).toBe("EventBusArchive52248A77");
    }
  });

  it("pins the logical ids of the schema registry and its schemas: under a new id CloudFormation would create a second one of the same name, which Schemas refuses, and the upgrade would roll back", () => {
    const deployed = ["card.created", "card.status_changed", "card.suspended", "card.updated", "transaction.changed", "transaction.created"];
    const hashes = ["DA773F99", "7FD440D7", "2597AE51", "1E759728", "45534702", "D135AFB4"];
    for (const template of [acmeT, globexT]) {
      expect(logicalIdOf(template, "AWS::EventSchemas::Registry")).toBe("EventSchemasRegistry99CC6CC6");
      expect(Object.keys(template.findResources("AWS::EventSchemas::Schema"))).toEqual(
        expect.arrayContaining(deployed.map((type, i) => `EventSchemasSchema${type.replace(/[._]/g, "")}${hashes[i]}`)),
      );
    }
  });

  it("gives the key a 30-day deletion window: the time an operator has to cancel the deletion a failed first deploy scheduled", () => {
    // runbook, "Offboarding and renaming a tenant": a rolled-back create schedules the key's deletion in 30 days, and
    // deleting the table it kept may need the key back (`cancel-key-deletion`), which works only within the window
    for (const template of [acmeT, globexT]) template.hasResourceProperties("AWS::KMS::Key", { PendingWindowInDays: 30 });
  });

  it("pins the secret's GenerateSecretString exactly: any change makes CloudFormation regenerate the whole secret value", () => {
    for (const template of [acmeT, globexT]) {
      const secret = template.toJSON()["Resources"]["SecretA29EB826"] as { Properties: { GenerateSecretString: unknown } };
      expect(secret.Properties.GenerateSecretString).toStrictEqual({
        SecretStringTemplate: '{"client_id":"","client_secret":"","refresh_token":""}',
        GenerateStringKey: "pii_salt",
        PasswordLength: 48,
        ExcludePunctuation: true,
      });
    }
  });

  it("deletes the schedule group, whose fixed name would block the next create of the stack if it were retained", () => {
    for (const [template, tenant] of [[acmeT, "acme-sandbox"], [globexT, "globex"]] as const) {
      template.hasResource("AWS::Scheduler::ScheduleGroup", {
        DeletionPolicy: "Delete",
        UpdateReplacePolicy: "Delete",
        Properties: { Name: `qashio-bridge-${tenant}` },
      });
    }
  });
});

describe("least-privilege IAM", () => {
  const scoped: [string, string][] = [
    ["dynamodb:", "AWS::DynamoDB::Table"],
    ["secretsmanager:PutSecretValue", "AWS::SecretsManager::Secret"],
    ["events:PutEvents", "AWS::Events::EventBus"],
    ["kms:", "AWS::KMS::Key"],
  ];

  it.each(scoped)("grants %s only on this tenant's own resource, never on *", (prefix, type) => {
    for (const template of [acmeT, globexT]) {
      const relevant = statements(template).filter((s) => actionsOf(s).some((a) => a.startsWith(prefix)));
      expect(relevant.length).toBeGreaterThan(0);
      for (const statement of relevant) {
        expect(resourcesOf(statement)).not.toContain("*");
        const text = JSON.stringify(statement.Resource);
        if (type === "AWS::Events::EventBus" && template === globexT) expect(text).toContain("event-bus/globex-finance");
        else expect(text).toContain(logicalIdOf(template, type));
      }
    }
  });

  it("uses * only for X-Ray, which has no resource-level permissions (not RotationSchedule's GetRandomPassword, which rotate-token never calls)", () => {
    const wildcardActions = statements(acmeT)
      .filter((s) => resourcesOf(s).includes("*"))
      .flatMap(actionsOf);
    expect([...new Set(wildcardActions)].sort()).toEqual(["xray:PutTelemetryRecords", "xray:PutTraceSegments"]);
    // Left out visibly: an info on the rotation function's role at synth.
    expect(Annotations.fromStack(acme).findInfo("*", Match.stringLikeRegexp("secretsmanager:GetRandomPassword")).map((i) => i.id)).toEqual([
      "/QashioBridge-acme-sandbox/RotateToken/Role",
    ]);
  });

  it.each(["PollTransactionsRole", "PollCardsRole", "RotateTokenRole"])(
    "keeps %s's only * statements in its no-resource-level policy, with exactly X-Ray",
    (role) => {
      for (const template of [acmeT, globexT]) {
        const wildcards = rolePolicies(template, role).flatMap(({ id, statements: mine }) =>
          mine.filter((s) => resourcesOf(s).includes("*")).map((s) => ({ id, s })),
        );
        expect(wildcards.every(({ id }) => id.startsWith(`${role.replace(/Role$/, "")}RoleNoResourceLevelActions`)), JSON.stringify(wildcards)).toBe(true);
        expect(wildcards.every(({ s }) => resourcesOf(s).length === 1 && s.Effect === "Allow")).toBe(true);
        expect([...new Set(wildcards.flatMap(({ s }) => actionsOf(s)))].sort()).toEqual(["xray:PutTelemetryRecords", "xray:PutTraceSegments"]);
      }
    },
  );

  /** The actions granted to the role whose logical id starts with `role`, beyond logs and X-Ray. */
  function grantedTo(template: Template, role: string): string[] {
    const mine = rolePolicies(template, role);
    expect(mine.length).toBeGreaterThan(0);
    return [...new Set(mine.flatMap((p) => p.statements.flatMap(actionsOf)).filter((a) => !/^(logs|xray):/.test(a)))].sort();
  }
  const via = (template: Template, role: string): string[] => {
    const text = JSON.stringify(roleStatements(template, role));
    return ["dynamodb", "secretsmanager", "sqs"].filter((service) => text.includes(`"${service}.`));
  };
  const pollerActions = [
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
    "events:PutEvents",
    "kms:Decrypt",
    "kms:DescribeKey",
    "kms:GenerateDataKey",
    "secretsmanager:GetSecretValue",
    "secretsmanager:ListSecretVersionIds",
    "secretsmanager:PutSecretValue",
    "sqs:SendMessage",
  ];

  it.each([
    ["PollTransactionsRole", ["dynamodb:Scan"]],
    ["PollCardsRole", []],
  ])("grants %s only the actions the poller's code sends", (role, extra) => {
    for (const template of [acmeT, globexT]) {
      expect(grantedTo(template, role)).toEqual([...pollerActions, ...extra].sort());
      expect(via(template, role)).toEqual(["dynamodb", "secretsmanager", "sqs"]);
    }
  });

  it("names each service of a key grant at the stack's region, as KMS sees kms:ViaService (dynamodb.<region>.amazonaws.com)", () => {
    const keyGrants = roleStatements(acmeT, "PollCardsRole").filter((st) => actionsOf(st).some((a) => a.startsWith("kms:")));
    expect(keyGrants.map((st) => st.Condition)).toEqual([
      { StringEquals: { "kms:ViaService": ["dynamodb.eu-west-1.amazonaws.com", "secretsmanager.eu-west-1.amazonaws.com", "sqs.eu-west-1.amazonaws.com"] } },
    ]);
  });

  it.each([
    ["PollTransactionsRole", "pollTransactions"],
    ["PollCardsRole", "pollCards"],
    ["RotateTokenRole", "rotateToken"],
  ] as const)("scopes %s's item actions to its partition keys (dynamodb:LeadingKeys), each its own actions, leaving only Scan unconditioned", (role, user) => {
    for (const [template, tenant] of [
      [acmeT, "acme-sandbox"],
      [globexT, "globex"],
    ] as const) {
      const mine = roleStatements(template, role).filter((st) => actionsOf(st).some((a) => a.startsWith("dynamodb:")));
      const items: [string[], unknown][] = [];
      for (const statement of mine) {
        if (actionsOf(statement).includes("dynamodb:Scan")) {
          expect(actionsOf(statement)).toEqual(["dynamodb:Scan"]);
          expect(role).toBe("PollTransactionsRole");
          expect(statement.Condition).toBeUndefined();
        } else if (JSON.stringify(statement.Resource).includes("/index/")) {
          // the count of the quarantine (QuarantineSize), on its partition only
          expect(role).not.toBe("RotateTokenRole");
          expect(actionsOf(statement)).toEqual(["dynamodb:Query"]);
          expect(statement.Condition).toEqual({ "ForAllValues:StringLike": { "dynamodb:LeadingKeys": [quarantinePartition(tenant)] } });
        } else {
          items.push([actionsOf(statement), statement.Condition]);
        }
      }
      // One statement per set of actions, on the partitions the function sends exactly those to.
      const grants = tableGrants(tenant, user);
      expect(items).toEqual(grants.map((g) => [[...g.actions], { "ForAllValues:StringLike": { "dynamodb:LeadingKeys": [...g.partitionKeys] } }]));
      expect(new Set(grants.map((g) => g.actions.join())).size).toBe(grants.length);
    }
    expect(Object.values(partitionKeyPatterns("acme-sandbox")).every((p) => p.includes("acme-sandbox"))).toBe(true);
  });

  it.each(Object.keys(TABLE_ACCESS) as (keyof typeof TABLE_ACCESS)[])("folds %s's partitions into grants without losing one: each keeps exactly its actions", (user) => {
    const patterns = partitionKeyPatterns("acme");
    const granted = tableGrants("acme", user).flatMap((g) => g.partitionKeys.map((pk) => [pk, [...g.actions]]));
    const wanted = Object.entries(TABLE_ACCESS[user]).map(([kind, actions]) => [patterns[kind as keyof typeof patterns], [...new Set(actions)].sort()]);
    expect(granted.sort()).toEqual(wanted.sort());
  });

  it.each(["PollTransactionsRole", "PollCardsRole"])("grants %s Query on the live-by-ttl index's own ARN only, not on every index of the table", (role) => {
    for (const template of [acmeT, globexT]) {
      const onIndexes = roleStatements(template, role).filter((s) => JSON.stringify(s.Resource).includes("/index/"));
      expect(onIndexes.map((s) => resourcesOf(s))).toEqual([
        [{ "Fn::Join": ["", [{ "Fn::GetAtt": [logicalIdOf(template, "AWS::DynamoDB::Table"), "Arn"] }, `/index/${LIVE_BY_TTL_INDEX}`]] }],
      ]);
    }
    expect(roleStatements(acmeT, "RotateTokenRole").filter((s) => JSON.stringify(s.Resource).includes("/index/"))).toEqual([]);
  });

  it.each([
    ["PollTransactionsRole", ["dynamodb:Query"]],
    ["PollCardsRole", []],
  ])("grants %s Query on the table itself only if it reads the quarantine (re-drive, conform-pii: transaction poller)", (role, query) => {
    for (const template of [acmeT, globexT]) {
      const onTable = roleStatements(template, role).filter((s) => !JSON.stringify(s.Resource).includes("/index/"));
      expect(onTable.flatMap(actionsOf).filter((a) => a === "dynamodb:Query")).toEqual(query);
    }
  });

  it("refuses an item grant that dynamodb:LeadingKeys could not scope: a Scan, or no partition key pattern", () => {
    const stack = new Stack(testApp(), "Grants");
    const table = new TenantTable(stack, "Table", { encryptionKey: new kms.Key(stack, "Key") });
    const role = new iam.Role(stack, "Role", { assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com") });
    expect(() => table.grantItemAccess(role, ["dynamodb:BatchGetItem", "dynamodb:Scan"], ["SNAP#acme#*"])).toThrow(
      "dynamodb:Scan cannot be scoped by dynamodb:LeadingKeys; use grantScan",
    );
    expect(() => table.grantItemAccess(role, ["dynamodb:BatchGetItem"], [])).toThrow("grantItemAccess needs at least one partition key pattern");
    expect(() => table.grantLiveCount(role, [])).toThrow("grantLiveCount needs at least one partition key pattern");
    // nothing was granted by the refused calls
    Template.fromStack(stack).resourceCountIs("AWS::IAM::Policy", 0);
  });

  it("grants the rotation the token lease and token items, and DescribeSecret with the rotation schedule, not its unused GetRandomPassword", () => {
    expect(grantedTo(acmeT, "RotateTokenRole")).toEqual([
      "dynamodb:DeleteItem",
      "dynamodb:GetItem",
      "dynamodb:PutItem",
      "dynamodb:UpdateItem",
      "kms:Decrypt",
      "kms:DescribeKey",
      "kms:GenerateDataKey",
      "secretsmanager:DescribeSecret",
      "secretsmanager:GetSecretValue",
      "secretsmanager:ListSecretVersionIds",
      "secretsmanager:PutSecretValue",
      "secretsmanager:UpdateSecretVersionStage",
    ]);
    expect(via(acmeT, "RotateTokenRole")).toEqual(["dynamodb", "secretsmanager"]);
  });

  it("lets the Scheduler role invoke the pollers and write its encrypted DLQ, nothing more", () => {
    expect(grantedTo(acmeT, "SchedulesRole")).toEqual(["kms:Decrypt", "kms:GenerateDataKey", "lambda:InvokeFunction", "sqs:SendMessage"]);
    expect(via(acmeT, "SchedulesRole")).toEqual(["sqs"]);
  });

  it("never grants kms:Encrypt or a wildcard key action, and always through a named service", () => {
    const kms = statements(acmeT).filter((s) => actionsOf(s).some((a) => a.startsWith("kms:")));
    for (const statement of kms) {
      expect(actionsOf(statement).filter((a) => a === "kms:Encrypt" || a.includes("*"))).toEqual([]);
      expect(JSON.stringify(statement.Condition)).toMatch(/kms:ViaService/);
    }
  });

  it("names no role of the stack in the key policy: a function's key use is its IAM policy's grant alone, without Encrypt or ReEncrypt", () => {
    for (const template of [acmeT, globexT]) {
      const key = Object.values(template.findResources("AWS::KMS::Key"))[0] as { Properties: { KeyPolicy: { Statement: PolicyStatement[] } } };
      // RotationSchedule's default grant (grantEncryptDecrypt to the rotation function through Secrets Manager) would add
      // the rotation role here with kms:Encrypt, kms:ReEncrypt* and kms:GenerateDataKey*, beyond its IAM policy.
      const toRoles = key.Properties.KeyPolicy.Statement.filter((st) => JSON.stringify(st.Principal?.AWS ?? "").includes("Fn::GetAtt"));
      expect(toRoles, JSON.stringify(toRoles)).toEqual([]);
    }
    // The rotation still has what it needs of the key, through Secrets Manager only (as the pollers, which write the
    // secret too), and its secret actions.
    expect(roleStatements(acmeT, "RotateTokenRole")).toContainEqual(
      expect.objectContaining({ Action: ["kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey"] }),
    );
  });

  it("conditions every Lambda permission on its source, Secrets Manager's rotation invoke on the stack's account", () => {
    for (const template of [acmeT, globexT]) {
      const permissions = Object.values(template.findResources("AWS::Lambda::Permission")) as { Properties: Record<string, unknown> }[];
      expect(permissions.map((p) => p.Properties.Principal)).toContain("secretsmanager.amazonaws.com");
      for (const { Properties: p } of permissions) {
        expect(p.SourceAccount ?? p.SourceArn, JSON.stringify(p)).toBeDefined();
        // the pseudo parameter even in the pinned acme stack: pinning must not replace the permission
        if (p.Principal === "secretsmanager.amazonaws.com") expect(p.SourceAccount).toEqual({ Ref: "AWS::AccountId" });
      }
    }
  });

  it("lets the pollers publish only under the tenant's own source, on its own bus", () => {
    for (const template of [acmeT, globexT]) {
      const puts = statements(template).filter((st) => actionsOf(st).includes("events:PutEvents"));
      expect(puts).toHaveLength(2);
      for (const st of puts) {
        expect(actionsOf(st)).toEqual(["events:PutEvents"]);
        expect(st.Condition).toEqual({ "ForAllValues:StringEquals": { "events:source": ["qashio.bridge"] }, Null: { "events:source": "false" } });
      }
    }
    const custom = { ...(loadTenantsFile(EXAMPLE_TENANTS_FILE)[1] as TenantConfig), eventSource: "globex.cards" };
    const [stack] = buildTestApp({ tenants: [custom] }).stacks;
    const put = statements(Template.fromStack(stack!)).find((st) => actionsOf(st).includes("events:PutEvents"));
    expect(put?.Condition).toMatchObject({ "ForAllValues:StringEquals": { "events:source": ["globex.cards"] } });
  });

  it("gives the stacks of two tenants no reference to each other", () => {
    expect(JSON.stringify(acmeT.toJSON())).not.toContain("globex");
    expect(JSON.stringify(globexT.toJSON())).not.toContain("acme");
  });

  it("fixes no resource name two tenants could share, even one whose id starts with the other's: the secret and table get CloudFormation's", () => {
    const sandbox = loadTenantsFile(EXAMPLE_TENANTS_FILE)[0] as TenantConfig;
    const stacks = buildTestApp({ tenants: [sandbox, { ...sandbox, id: "acme" }] }).stacks;
    // References, and names scoped inside one of the tenant's own resources (a role's policy, a registry's schema, a
    // schedule group's schedules).
    const scoped = new Set(["MetricName", "PolicyName", "SchemaName", "GroupName", "DisplayName", "RegistryName@AWS::EventSchemas::Schema", "Name@AWS::Scheduler::Schedule"]);
    const [first, second] = stacks.map((stack) => {
      const names = Object.values(Template.fromStack(stack).toJSON().Resources as Record<string, { Type: string; Properties?: Record<string, unknown> }>).flatMap(
        ({ Type, Properties }) =>
          Object.entries(Properties ?? {})
            .filter(([key, value]) => /Name$/.test(key) && typeof value === "string" && !scoped.has(key) && !scoped.has(`${key}@${Type}`))
            .map(([key, value]) => `${Type} ${key} ${String(value)}`),
      );
      expect(names.join("\n")).not.toMatch(/AWS::(SecretsManager::Secret|DynamoDB::(Global)?Table) /);
      return names;
    });
    // Bus, schedule group, registry, key alias, dashboard and every alarm.
    expect(first?.length).toBeGreaterThan(20);
    const inSecond = new Set(second);
    expect(first?.filter((name) => inSecond.has(name))).toEqual([]);
  });
});

describe("ops", () => {
  it("alarms on the runtime's signals with the documented thresholds, notifying the tenant's target", () => {
    const alarm = (name: string) =>
      Object.values(globexT.findResources("AWS::CloudWatch::Alarm", { Properties: { AlarmName: `QashioBridge-globex-${name}` } }))[0] as
        | { Properties: Record<string, unknown> }
        | undefined;
    expect(alarm("TokenFamilyRevoked")?.Properties).toMatchObject({
      Threshold: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      Namespace: "QashioBridge",
      MetricName: "TokenFamilyRevoked",
      // a state gauge (runbook: on from the first report until a cycle the provider answers reports 0)
      Statistic: "Maximum",
      Period: 60,
      EvaluationPeriods: 1,
      TreatMissingData: "ignore",
    });
    expect(alarm("SyncLag")?.Properties).toMatchObject({ Threshold: 900, ComparisonOperator: "GreaterThanThreshold" });
    expect(alarm("QuarantineNotEmpty")?.Properties).toMatchObject({
      Threshold: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      // on the first cycle that reports a record held (runbook: "holds at least one record")
      EvaluationPeriods: 1,
      TreatMissingData: "ignore",
      Metrics: [expect.objectContaining({ Expression: "SELECT MAX(QuarantineSize) FROM QashioBridge WHERE tenant = 'globex'" })],
    });
    expect(alarm("QuarantineGrowing")?.Properties).toMatchObject({
      Threshold: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      TreatMissingData: "notBreaching",
      Namespace: "QashioBridge",
      MetricName: "Quarantined",
      Statistic: "Sum",
    });
    expect(alarm("AcknowledgeRefused")?.Properties).toMatchObject({
      Threshold: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      TreatMissingData: "notBreaching",
      Namespace: "QashioBridge",
      MetricName: "AcknowledgeRefused",
      Statistic: "Sum",
      DatapointsToAlarm: 2,
    });
    // Sum: any failed invocation counts (an Average of 1 would need every invocation of the period to fail)
    expect(alarm("Errors-PollTransactions")?.Properties).toMatchObject({ MetricName: "Errors", Namespace: "AWS/Lambda", Statistic: "Sum", Threshold: 1, DatapointsToAlarm: 2 });
    expect(alarm("Errors-RotateToken")?.Properties).toMatchObject({ MetricName: "Errors", Statistic: "Sum", Threshold: 1, EvaluationPeriods: 1 });
    // globex polls transactions every 2 minutes and cards every 30: the slower schedule's period, so each holds a card tick
    expect(alarm("DeadLetters-Pollers")?.Properties).toMatchObject({ MetricName: "NumberOfMessagesSent", Statistic: "Sum", Threshold: 1, Period: 1800 });
    expect(alarm("EventsFailed")?.Properties).toMatchObject({ Namespace: "QashioBridge", MetricName: "EventsFailed", Statistic: "Sum", Threshold: 1 });
    const topic = { Ref: logicalIdOf(globexT, "AWS::SNS::Topic") };
    for (const a of Object.values(globexT.findResources("AWS::CloudWatch::Alarm"))) {
      expect((a as { Properties: { AlarmActions: unknown[] } }).Properties.AlarmActions).toEqual([topic]);
    }
  });

  it("alarms on every webhook DLQ and a created bus's DLQ, and sends acme's alarms to its imported topic", () => {
    // runbook: "alarm while they hold at least one message": the most held in each 5 minutes, from the first one
    const held = {
      MetricName: "ApproximateNumberOfMessagesVisible",
      Statistic: "Maximum",
      Period: 300,
      EvaluationPeriods: 1,
      Threshold: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      TreatMissingData: "notBreaching",
    };
    // a webhook DLQ holds events still to redrive: it stays on until they are handled (its metrics: below); 1 of 2
    // periods, so a failed write EventBridge reports late is still evaluated
    acmeT.hasResourceProperties("AWS::CloudWatch::Alarm", {
      AlarmName: "QashioBridge-acme-sandbox-DeadLetters-Webhook-erp",
      AlarmActions: ["arn:aws:sns:eu-west-1:111111111111:qashio-bridge-ops"],
      EvaluationPeriods: 2,
      DatapointsToAlarm: 1,
      Threshold: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      TreatMissingData: "notBreaching",
    });
    // a created bus's DLQ holds events the bus could not process: it stays on until they are handled too
    acmeT.hasResourceProperties("AWS::CloudWatch::Alarm", {
      ...held,
      AlarmName: "QashioBridge-acme-sandbox-DeadLetters-EventBus",
      Dimensions: [{ Name: "QueueName", Value: { "Fn::GetAtt": [Match.stringLikeRegexp("^EventBusDeadLettersQueue"), "QueueName"] } }],
      Threshold: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
    });
    // 17 since the card poller has a heartbeat of its own (Heartbeat-PollCards); a webhook's lost events fire its
    // DeadLetters alarm, not one more (a resource per webhook, against the 500)
    acmeT.resourceCountIs("AWS::CloudWatch::Alarm", 17);
    expect(Object.keys(globexT.findResources("AWS::CloudWatch::Alarm")).filter((id) => id.includes("EventBus"))).toEqual([]);
  });

  /** The metrics of a dead-letter alarm on an expression: the expression, then the metrics by id. */
  function deadLetterMetricsOf(template: Template, alarmName: string): Record<string, unknown>[] {
    const [alarm] = Object.values(template.findResources("AWS::CloudWatch::Alarm", { Properties: { AlarmName: alarmName } })) as {
      Properties: { Metrics?: Record<string, unknown>[]; MetricName?: string };
    }[];
    expect(alarm?.Properties.MetricName).toBeUndefined();
    return alarm?.Properties.Metrics ?? [];
  }

  /**
   * A metric dimension's value as CloudFormation resolves it: `Ref` of a rule is its physical id, `<bus name>|<rule
   * name>` on any bus but the default one (the runbook's resource list shows it so), `Ref` of a created bus its name;
   * `Fn::Split` and `Fn::Select` as documented. A rule's generated name is taken as `<logical id>-name`.
   */
  function resolvedDimension(template: Template, value: unknown): unknown {
    if (typeof value !== "object" || value === null) return value;
    const intrinsic = value as { Ref?: string; "Fn::Split"?: [string, unknown]; "Fn::Select"?: [number, unknown] };
    if (intrinsic.Ref !== undefined) {
      const resource = template.toJSON().Resources[intrinsic.Ref] as { Type: string; Properties: { Name?: string; EventBusName?: unknown } };
      if (resource.Type === "AWS::Events::EventBus") return resource.Properties.Name;
      const bus = resource.Properties.EventBusName === undefined ? "default" : resolvedDimension(template, resource.Properties.EventBusName);
      return bus === "default" ? `${intrinsic.Ref}-name` : `${String(bus)}|${intrinsic.Ref}-name`;
    }
    if (intrinsic["Fn::Split"] !== undefined) {
      const [separator, source] = intrinsic["Fn::Split"];
      return String(resolvedDimension(template, source)).split(separator);
    }
    if (intrinsic["Fn::Select"] !== undefined) {
      const [index, list] = intrinsic["Fn::Select"];
      return (resolvedDimension(template, list) as unknown[])[index];
    }
    return value;
  }

  /** The dimensions of the `failed` term of a webhook's DeadLetters alarm, by name, as CloudFormation resolves them. */
  function failedWriteDimensions(template: Template, alarmName: string): Record<string, unknown> {
    const failed = deadLetterMetricsOf(template, alarmName).find((m) => m["Id"] === "failed") as {
      MetricStat: { Metric: { Dimensions: { Name: string; Value: unknown }[] } };
    };
    return Object.fromEntries(failed.MetricStat.Metric.Dimensions.map(({ Name, Value }) => [Name, resolvedDimension(template, Value)]));
  }

  it("counts a webhook rule's lost events under the rule's name, not its physical id: Ref of a rule on the tenant's bus is <bus>|<rule>", () => {
    for (const hook of ["erp", "cards-audit"]) {
      const logicalId = Object.keys(acmeT.findResources("AWS::Events::Rule")).find((id) => id.startsWith(`Webhook${hook.replaceAll("-", "")}Rule`));
      // AWS/Events reports a custom bus's rule by its name and the bus's: a RuleName holding the bus too matches nothing
      expect(failedWriteDimensions(acmeT, `QashioBridge-acme-sandbox-DeadLetters-Webhook-${hook}`)).toEqual({
        EventBusName: "qashio-bridge-acme-sandbox",
        RuleName: `${logicalId}-name`,
      });
    }
    const [acme, globex] = loadTenantsFile(EXAMPLE_TENANTS_FILE) as [TenantConfig, TenantConfig];
    const imported = Template.fromStack(buildTestApp({ tenants: [{ ...globex, webhooks: acme.webhooks.slice(0, 1) }] }).stacks[0] as TenantStack);
    const importedRule = Object.keys(imported.findResources("AWS::Events::Rule"))[0];
    expect(failedWriteDimensions(imported, "QashioBridge-globex-DeadLetters-Webhook-erp")).toEqual({ EventBusName: "globex-finance", RuleName: `${importedRule}-name` });
  });

  it("fires a webhook's DeadLetters alarm on messages held or on events EventBridge could not even write there, on the rule of the tenant's bus", () => {
    for (const [hook, queue, rule] of [
      ["erp", /^WebhookerpDeadLettersQueue/, /^WebhookerpRule/],
      ["cards-audit", /^WebhookcardsauditDeadLettersQueue/, /^WebhookcardsauditRule/],
    ] as const) {
      const metrics = deadLetterMetricsOf(acmeT, `QashioBridge-acme-sandbox-DeadLetters-Webhook-${hook}`);
      expect(metrics).toEqual([
        // either one at 1 or more in a 5-minute period (their sum): a failed write is reported only when not zero
        expect.objectContaining({ Expression: "FILL(visible, 0) + FILL(failed, 0)", ReturnData: true }),
        {
          Id: "visible",
          ReturnData: false,
          MetricStat: {
            Metric: {
              Namespace: "AWS/SQS",
              MetricName: "ApproximateNumberOfMessagesVisible",
              Dimensions: [{ Name: "QueueName", Value: { "Fn::GetAtt": [expect.stringMatching(queue), "QueueName"] } }],
            },
            Period: 300,
            Stat: "Maximum",
          },
        },
        {
          Id: "failed",
          ReturnData: false,
          MetricStat: {
            Metric: {
              Namespace: "AWS/Events",
              MetricName: "InvocationsFailedToBeSentToDlq",
              // a rule of a custom bus reports with both dimensions (AWS: RuleName alone is the default bus's)
              Dimensions: [
                { Name: "EventBusName", Value: { Ref: expect.stringMatching(/^EventBus/) } },
                { Name: "RuleName", Value: { "Fn::Select": [1, { "Fn::Split": ["|", { Ref: expect.stringMatching(rule) }] }] } },
              ],
            },
            Period: 300,
            Stat: "Sum",
          },
        },
      ]);
      acmeT.hasResourceProperties("AWS::CloudWatch::Alarm", {
        AlarmName: `QashioBridge-acme-sandbox-DeadLetters-Webhook-${hook}`,
        AlarmDescription: Match.stringLikeRegexp("could not even be written to it.*Runbook: docs/runbook\\.md#dead-letters$"),
      });
    }
    // only a webhook's queue has a rule writing to it: the others alarm on the depth alone
    expect(Object.values(acmeT.findResources("AWS::CloudWatch::Alarm")).filter((a) => JSON.stringify(a).includes("InvocationsFailedToBeSentToDlq"))).toHaveLength(2);
  });

  it("counts a webhook rule of the default bus by its RuleName alone, as AWS reports the default bus's rules", () => {
    const [acme, globex] = loadTenantsFile(EXAMPLE_TENANTS_FILE) as [TenantConfig, TenantConfig];
    const tenant = { ...globex, eventBus: { mode: "import" as const, name: "default" }, webhooks: acme.webhooks.slice(0, 1) };
    const template = Template.fromStack(buildTestApp({ tenants: [tenant] }).stacks[0] as TenantStack);
    const failed = deadLetterMetricsOf(template, "QashioBridge-globex-DeadLetters-Webhook-erp").find((m) => m["Id"] === "failed");
    expect(failed).toMatchObject({
      MetricStat: { Metric: { MetricName: "InvocationsFailedToBeSentToDlq", Dimensions: [{ Name: "RuleName", Value: { Ref: expect.stringMatching(/^WebhookerpRule/) } }] } },
    });
    // the default bus's rule: its Ref is its name already (no `<bus>|` to take off)
    const rule = Object.keys(template.findResources("AWS::Events::Rule"))[0];
    expect(failedWriteDimensions(template, "QashioBridge-globex-DeadLetters-Webhook-erp")).toEqual({ RuleName: `${rule}-name` });
  });

  it("draws a dashboard per tenant with every required graph, split by type and status class", () => {
    globexT.hasResourceProperties("AWS::CloudWatch::Dashboard", { DashboardName: "QashioBridge-globex" });
    const body = JSON.stringify(globexT.findResources("AWS::CloudWatch::Dashboard"));
    for (const title of Object.values(DASHBOARD_WIDGETS)) expect(body).toContain(title);
    expect(body).toContain("SELECT SUM(EventsPublished) FROM QashioBridge WHERE tenant = 'globex' GROUP BY type");
    expect(body).toContain(String.raw`[\"QashioBridge\",\"QuarantineSize\",\"service\",\"qashio-bridge\",\"tenant\",\"globex\",{\"label\":\"records held\",\"stat\":\"Maximum\"}]`);
    expect(body).toContain("SELECT SUM(ProviderErrors) FROM QashioBridge WHERE tenant = 'globex' GROUP BY status_class");
    expect(body).toContain(String.raw`[\"QashioBridge\",\"AcknowledgeRefused\",\"service\",\"qashio-bridge\",\"tenant\",\"globex\",{\"label\":\"acknowledge refused\",\"stat\":\"Sum\"}]`);
    // the card walks' throughput beside the transactions'
    expect(body).toContain(String.raw`[\"QashioBridge\",\"TransactionsPulled\",\"service\",\"qashio-bridge\",\"tenant\",\"globex\",{\"label\":\"transactions pulled\",\"stat\":\"Sum\"}]`);
    expect(body).toContain(String.raw`[\"QashioBridge\",\"CardsPulled\",\"service\",\"qashio-bridge\",\"tenant\",\"globex\",{\"label\":\"cards pulled\",\"stat\":\"Sum\"}]`);
    // what a fast-path tenant's Heartbeat-PollCards counts, so the dashboard shows why it fires
    expect(body).toContain(String.raw`[\"QashioBridge\",\"FullCardWalks\",\"service\",\"qashio-bridge\",\"tenant\",\"globex\",{\"label\":\"full card walks\",\"stat\":\"Sum\"}]`);
    // the fast path's unread card details, which the CardDetailsUnread alarm does not count (its periods are the full walk's)
    expect(body).toContain(
      String.raw`[\"QashioBridge\",\"FastPathCardDetailsUnread\",\"service\",\"qashio-bridge\",\"tenant\",\"globex\",{\"label\":\"card details unread (fast path)\",\"stat\":\"Sum\"}]`,
    );
    expect(body).toContain("ApproximateNumberOfMessagesVisible");
    // acme's dead-letter graph also shows its created bus's DLQ
    expect(JSON.stringify(acmeT.findResources("AWS::CloudWatch::Dashboard"))).toMatch(/EventBusDeadLettersQueue[0-9A-F]{8}.{0,80}EventBus/);
  });
});

/** The dashboard's widgets, with every CloudFormation token in the body replaced by a placeholder string. */
function dashboardWidgets(template: Template): { properties: { title?: string; metrics?: unknown[][] } }[] {
  const [dashboard] = Object.values(template.findResources("AWS::CloudWatch::Dashboard")) as { Properties: { DashboardBody: unknown } }[];
  const body = dashboard?.Properties.DashboardBody as string | { "Fn::Join": [string, unknown[]] };
  const text = typeof body === "string" ? body : body["Fn::Join"][1].map((part) => (typeof part === "string" ? part : "TOKEN")).join("");
  return (JSON.parse(text) as { widgets: { properties: { title?: string; metrics?: unknown[][] } }[] }).widgets;
}

describe("dashboard", () => {
  it("gives every graph at most one Metrics Insights query, the most one GetMetricData call may run", () => {
    for (const template of [acmeT, globexT]) {
      const graphs = dashboardWidgets(template).filter((w) => w.properties.metrics !== undefined);
      expect(graphs.length).toBe(Object.keys(DASHBOARD_WIDGETS).length);
      for (const { properties } of graphs) {
        const selects = (properties.metrics ?? []).flat().filter((m) => /^\s*SELECT\b/i.test((m as { expression?: string }).expression ?? ""));
        expect(selects.length, properties.title).toBeLessThanOrEqual(1);
      }
    }
  });

  it("graphs the transactions' backlog by pull status: the gauge's Maximum under the exact dimension set the runtime emits (service, tenant, status)", () => {
    for (const [template, tenant] of [
      [acmeT, "acme-sandbox"],
      [globexT, "globex"],
    ] as const) {
      const backlog = dashboardWidgets(template).find((w) => w.properties.title === DASHBOARD_WIDGETS.backlog);
      const line = (status: string, label: string) => ["QashioBridge", "TransactionsBacklog", "service", "qashio-bridge", "status", status, "tenant", tenant, { label, stat: "Maximum" }];
      expect(backlog?.properties.metrics).toEqual([line("not_synced", "not_synced (new)"), line("outdated", "outdated (changed)")]);
    }
  });

  it("shows every alarm's state, the SyncLag alarm's threshold on the lag graph, and each function's errors and throttles", () => {
    for (const template of [acmeT, globexT]) {
      const widgets = dashboardWidgets(template) as {
        type: string;
        properties: { title?: string; alarms?: unknown[]; metrics?: unknown[][]; annotations?: { horizontal?: { value: number; label: string }[] } };
      }[];
      const alarms = template.findResources("AWS::CloudWatch::Alarm") as Record<string, { Properties: { AlarmName: string; Threshold: number } }>;
      const statuses = widgets.filter((w) => w.type === "alarm");
      expect(statuses).toHaveLength(1);
      expect(statuses[0]?.properties.alarms).toHaveLength(Object.keys(alarms).length);
      const body = JSON.stringify(template.findResources("AWS::CloudWatch::Dashboard"));
      for (const id of Object.keys(alarms)) expect(body).toContain(`{"Fn::GetAtt":["${id}","Arn"]}`);

      const syncLag = Object.values(alarms).find((a) => a.Properties.AlarmName.endsWith("-SyncLag"));
      const lag = widgets.find((w) => w.properties.title === DASHBOARD_WIDGETS.syncLag);
      expect(lag?.properties.annotations?.horizontal).toEqual([expect.objectContaining({ value: syncLag?.Properties.Threshold, label: "alarm threshold" })]);

      const functions = widgets.find((w) => w.properties.title === DASHBOARD_WIDGETS.functions);
      const series = (functions?.properties.metrics ?? []).map((m) => `${String(m[1])} ${(m.at(-1) as { label: string; stat: string }).label}/${(m.at(-1) as { stat: string }).stat}`);
      for (const name of ["PollTransactions", "PollCards", "RotateToken"]) {
        expect(series).toContain(`Errors ${name} errors/Sum`);
        expect(series).toContain(`Throttles ${name} throttles/Sum`);
      }
    }
    // gauges of 1 while on (0 once off): their maximum, not a sum of reports
    const dashboard = JSON.stringify(globexT.findResources("AWS::CloudWatch::Dashboard"));
    for (const [name, label] of [
      ["TokenHeldInTable", "token held in table (1 = yes)"],
      ["TokenFamilyRevoked", "family revoked (1 = yes)"],
    ]) {
      expect(dashboard).toContain(String.raw`[\"QashioBridge\",\"${name}\",\"service\",\"qashio-bridge\",\"tenant\",\"globex\",{\"label\":\"${label}\",\"stat\":\"Maximum\"}]`);
    }
  });
});

describe("runbook", () => {
  it("has the section every alarm description links to", () => {
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    const anchors = new Set(
      [...runbook.matchAll(/^## (.+)$/gm)].map((m) => (m[1] as string).toLowerCase().replace(/[^a-z0-9 -]/g, "").replace(/ /g, "-")),
    );
    const links = Object.values(acmeT.findResources("AWS::CloudWatch::Alarm")).map(
      (a) => /docs\/runbook\.md#([\w-]+)/.exec((a as { Properties: { AlarmDescription: string } }).Properties.AlarmDescription)?.[1],
    );
    expect(links.length).toBeGreaterThan(0);
    for (const link of links) expect(anchors).toContain(link);
  });

  it("sends publish records to the re-drive section, never calling them transient or telling to just delete them", () => {
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    const section = /^## QuarantineNotEmpty$([\s\S]*?)^## /m.exec(runbook)?.[1] ?? "";
    expect(section).toContain("re-drive: see [Re-driving quarantined transactions](#re-driving-quarantined-transactions)");
    expect(section).toContain("Never just delete a `publish` record");
    expect(section).not.toMatch(/nothing to fix/i);
    expect(runbook).toMatch(/^## Re-driving quarantined transactions$/m);
  });

  it("says what a deploy and a re-drive do with the records of an oversized event and of a transaction quarantined for validation", () => {
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    const section = /^## QuarantineNotEmpty$([\s\S]*?)^## /m.exec(runbook)?.[1] ?? "";
    // A re-drive reads the same too-large transaction and keeps its record (restarting its retention): without this,
    // "fix the cause, re-drive, never just delete" leaves the record and the alarm on for good.
    expect(section).toMatch(/`publish: oversized: \.\.\.`[^]*no\s+deploy\s+fixes\s+(?:it|them)/);
    expect(section).toMatch(/oversized[^]*changes\s+at\s+the\s+provider[^]*next\s+re-drive[^]*removes\s+the\s+record/);
    // An acknowledged transaction is not listed again: after a fixed rule, the re-drive delivers it; deleting its record
    // delivers nothing. One the re-drive cannot read again (no qashio_id) or that was never acknowledged is said apart.
    expect(section).toMatch(/`validation: \.\.\.`[^]*re-drive\s+it\s+\(see\s+\[Re-driving\s+quarantined\s+transactions\]/);
    expect(section).toMatch(/without\s+such\s+an\s+`entityId`\s+was\s+not\s+acknowledged/);
    expect(section).toMatch(/`redrive`\s+leaves\s+alone\s+card\s+records[^]*without\s+a\s+`qashio_id`/);
    const redrive = /^## Re-driving quarantined transactions$([\s\S]*?)^## /m.exec(runbook)?.[1] ?? "";
    expect(redrive).toContain("`its current state still fails validation`");
    expect(redrive).toMatch(/`publish: oversized`(?:\s+or\s+`publish: integer out of range`)?\s+record\s+is\s+kept\s+so\s+on\s+every\s+re-drive/);
  });

  it("says how to find every generated name its commands need: queues, log groups, archive, webhook rules, schedules", () => {
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    const listed = [...runbook.matchAll(/^# (\S+)\.\.\.\s+(AWS::\S+)/gm)].map((m) => ({
      id: new RegExp(`^${(m[1] as string).replace("<name>", "[A-Za-z0-9]+")}[0-9A-F]{8}$`),
      type: m[2] as string,
    }));
    for (const template of [acmeT, globexT]) {
      for (const type of ["AWS::SQS::Queue", "AWS::Logs::LogGroup", "AWS::Events::Archive", "AWS::Events::Rule"]) {
        const ids = Object.keys(template.findResources(type));
        // acme has webhooks, globex none
        if (template === acmeT) expect(ids.length, type).toBeGreaterThan(0);
        for (const id of ids) expect(listed.some((l) => l.type === type && l.id.test(id)), id).toBe(true);
      }
      template.hasResourceProperties("AWS::Scheduler::ScheduleGroup", { Name: Match.stringLikeRegexp("^qashio-bridge-") });
    }
    expect(runbook).toContain("aws scheduler list-schedules --group-name qashio-bridge-$T");
  });

  it("says where each name its commands take comes from: `<X output>` is a stack output, `<X name>` or `<X ARN>` a line of the resource list", () => {
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    const listed = new Set([...runbook.matchAll(/^# (\w+)\.\.\.\s+AWS::/gm)].map((m) => m[1]));
    const outputs = Object.keys(acmeT.toJSON().Outputs as object);
    const placeholders = [...runbook.matchAll(/<([A-Z]\w+) (output|name|ARN)>/g)];
    expect(placeholders.length).toBeGreaterThan(0);
    for (const [placeholder, id, what] of placeholders) {
      if (what === "output") expect(outputs, placeholder).toContain(id);
      else expect([...listed], placeholder).toContain(id);
    }
    // and the list names only resources the stacks create
    const ids = [acmeT, globexT].flatMap((template) => Object.keys(template.toJSON().Resources as object));
    for (const id of listed) expect(ids.some((logical) => new RegExp(`^${id}[0-9A-F]{8}$`).test(logical)), id).toBe(true);
  });

  it("moves a tenant to another region of the same account by deleting the old stack first: the dashboard's name is per account", () => {
    // CloudWatch dashboards are global to the account (their ARN has no region): while the old stack holds
    // QashioBridge-<tenant>, the new region's stack fails to create its dashboard ("already exists") and rolls back.
    for (const [template, id] of [[acmeT, "acme-sandbox"], [globexT, "globex"]] as const) {
      template.hasResourceProperties("AWS::CloudWatch::Dashboard", { DashboardName: `QashioBridge-${id}` });
    }
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    const move = /^\*\*Moving a tenant to another region or account\*\*([\s\S]*?)^$/m.exec(runbook)?.[1] ?? "";
    expect(move).toMatch(/dashboard[^]*per\s+account,\s+not\s+per\s+region/);
    expect(move).toMatch(/same\s+account[^]*delete\s+the\s+old\s+stack\s+first/);
    expect(move).not.toMatch(/A created bus does not block the new deploy/);
  });

  it("names the --output of every aws command whose answer goes to jq: the profile's output setting (text, table) would decide otherwise", () => {
    const pipedIn = (doc: string): string[] => {
      // A command continued with a backslash and the `| jq` on its next line are one pipeline.
      const text = readFileSync(join(REPO_ROOT, doc), "utf8").replaceAll("\\\n", " ");
      return [...text.matchAll(/\baws\s+[a-z0-9-]+\s+[a-z0-9-]+[^|`\n]*\|\s*jq\b/g)].map((m) => m[0]);
    };
    // The runbook and the upgrade notes hold such pipelines; README and the local mode page may come to.
    for (const doc of ["docs/runbook.md", "docs/upgrading.md"]) expect(pipedIn(doc).length, doc).toBeGreaterThan(0);
    for (const doc of DOCS_WITH_AWS_COMMANDS) for (const command of pipedIn(doc)) expect(command, doc).toMatch(/\s--output\s+(json|text)\s/);
  });

  it("hands jq a shell variable through its environment, never as an argument `ps` shows (the salt, a webhook's credential)", () => {
    for (const doc of DOCS_WITH_AWS_COMMANDS) {
      const text = readFileSync(join(REPO_ROOT, doc), "utf8");
      expect(text, doc).not.toMatch(/\bjq\b[^|`\n]*--arg(?:json)?\s+\w+\s+"?\$[A-Za-z_{]/);
    }
    expect(readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8")).toContain(`SALT="$SALT" jq '.pii_salt = env.SALT'`);
  });

  it("says what a tick logs when the tenant's secret is scheduled for deletion or gone, how to restore it, and what a secret gone for good costs", async () => {
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    const errors = /^## Function errors$([\s\S]*?)^## /m.exec(runbook)?.[1] ?? "";
    // The message quoted is the one the code writes for Secrets Manager's answer to a read of such a secret.
    for (const awsError of ["InvalidRequestException", "ResourceNotFoundException"]) {
      const secrets = { send: () => Promise.reject(Object.assign(new Error("no such secret"), { name: awsError })) } as unknown as SecretsManagerClient;
      const error = await new ProviderSecretClient({ secrets, secretId: "arn:aws:secretsmanager:eu-west-1:111111111111:secret:s-AbCdEf" })
        .read()
        .then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(SecretStoreError);
      expect(errors).toContain(`"${(error as Error).message}"`);
    }
    expect(errors).toContain("`SecretStoreError`");
    expect(errors).toContain('aws secretsmanager restore-secret --secret-id "$S"');
    expect(errors).toMatch(/S=\$\(out SecretArn\)/);
    // The stack denies DeleteSecret (pinned above): whoever deleted it changed that policy, which a deploy does not put back.
    expect(errors).toContain('aws secretsmanager get-resource-policy --secret-id "$S"');
    // The policy it puts back is the stack's, whole: put-resource-policy replaces every statement.
    const policies = Object.values(acmeT.findResources("AWS::SecretsManager::ResourcePolicy")) as {
      Properties: { ResourcePolicy: { Statement: Record<string, unknown>[] } };
    }[];
    expect(policies).toHaveLength(1);
    const statements = policies[0]?.Properties.ResourcePolicy.Statement ?? [];
    expect(statements).toHaveLength(1);
    for (const member of ["Effect", "Action", "Resource"]) expect(errors).toContain(`${member}: "${String(statements[0]?.[member])}"`);
    expect(errors).toContain('Principal: {AWS: "arn:aws:iam::\\(env.A):root"}');
    expect(errors).toContain("put-resource-policy --secret-id \"$S\" --resource-policy file:///dev/stdin");
    // Gone for good: the refresh token went with it, and the stack cannot take another secret in its place.
    expect(errors).toMatch(/gone for good[^]*re-authoriz/i);
  });

  it("says what to do with a quarantine item that cannot be decoded: export it first, and give an acknowledged transaction's record a body the re-drive reads rather than delete it", async () => {
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    const errors = /^## Function errors$([\s\S]*?)^## /m.exec(runbook)?.[1] ?? "";
    const redrive = /^## Re-driving quarantined transactions$([\s\S]*?)^## /m.exec(runbook)?.[1] ?? "";
    const holding = (item: Record<string, unknown>) =>
      new DynamoQuarantine({ doc: { send: () => Promise.resolve({ Items: [item] }) } as unknown as DynamoDBDocumentClient, tableName: "table", tenant: "<tenant>" });
    const held = {
      pk: "QUAR#<tenant>",
      sk: "<record id>",
      kind: "transaction",
      entityId: "6f1c2a0e-8d4b-4c3e-9a51-2b7d0e4f8a13",
      reason: `${PUBLISH_FAILURE_PREFIX}MalformedDetail`,
      at: "2025-01-01T00:00:00.000Z",
      ttl: 4_102_444_800,
    };
    // The message quoted is the one the code writes for a damaged body.
    const error = await holding({ ...held, raw: '{"qashio_id":"CT00000001",' })
      .list()
      .then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptItemError);
    expect(errors).toContain(`\`CorruptItemError\` "${(error as Error).message}"`);
    expect(redrive).toContain(`"${(error as Error).message}"`);
    // Exported before anything is changed, never to a file others can read (the body is in the tenant's PII form).
    expect(errors).toMatch(/\(umask 077; aws dynamodb get-item [^\n]*--output json > /);
    // A publish record holds a change already acknowledged: deleting it loses that change.
    expect(errors).toMatch(/acknowledged[^]*deleting it loses/);
    // The repair: a body holding only the qashio_id, through jq's environment, every other body attribute removed...
    expect(errors).toContain(`Q="$Q" jq -n '{":raw": {S: ({qashio_id: env.Q} | tojson)}}'`);
    expect(errors).toContain("SET #raw = :raw REMOVE rawz, rawTruncatedFrom, rawQashioId");
    expect(errors).toContain("--expression-attribute-values file:///dev/stdin");
    // ...which decodes, and which the re-drive takes and reads the transaction again by.
    const [record] = await holding({ ...held, raw: JSON.stringify({ qashio_id: "CT00000001" }) }).list();
    expect(record !== undefined && isRedrivable(record)).toBe(true);
    expect(recordQashioId(record?.raw)).toBe("CT00000001");
    expect(errors).toMatch(/then re-drive \(\[Re-driving quarantined transactions\]\(#re-driving-quarantined-transactions\)\)/);
  });

  it("says what the PublishError a cycle fails with means, which EventsFailed sends the reader to Function errors for", async () => {
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    const errors = /^## Function errors$([\s\S]*?)^## /m.exec(runbook)?.[1] ?? "";
    const failed = /^## EventsFailed$([\s\S]*?)^## /m.exec(runbook)?.[1] ?? "";
    expect(failed).toMatch(/`PublishError`[^]*fails the\s+cycle instead[^]*see \[Function errors\]\(#function-errors\)/);
    // The message quoted is the one the code writes for a batch's first call the setup refuses as a whole.
    const denied = Object.assign(new Error("not authorized"), { name: "AccessDeniedException", $metadata: { httpStatusCode: 400 } });
    const client = { send: () => Promise.reject(denied) } as unknown as EventBridgeClient;
    const event = {
      source: "qashio.bridge",
      detailType: "transaction.created",
      time: "2026-03-01T12:00:00.000Z",
      detail: { id: "ev_1", type: "transaction.created", schema_version: "1", tenant: "acme", occurred_at: "2026-03-01T12:00:00.000Z", subject: { type: "transaction", id: "t1", sequence: 1 }, data: { object: { id: "t1" } } },
    } as unknown as Parameters<EventBridgePublisher["publish"]>[0][number];
    const error = await new EventBridgePublisher({ client, eventBusName: "bus" }).publish([event]).then(() => undefined, (e: unknown) => e);
    expect((error as Error).name).toBe("PublishError");
    expect(errors).toContain(`\`PublishError\` "${(error as Error).message}"`);
    // What to fix, and that nothing of the page was acknowledged (so its transactions come again, same ids).
    expect(errors).toMatch(/`PublishError`[^]*acknowledg[^]*same `detail\.id`[^]*\[EventsFailed\]\(#eventsfailed\)/);
  });

  it("gives the command that puts client credentials back into the secret: read without echo, through jq's environment, merged into the version read", () => {
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    const errors = /^## Function errors$([\s\S]*?)^## /m.exec(runbook)?.[1] ?? "";
    const revoked = /^## TokenFamilyRevoked$([\s\S]*?)^## /m.exec(runbook)?.[1] ?? "";
    // Named, not spelled out, was all the runbook gave; the command now is in one place, where the error points.
    expect(runbook).not.toContain("get-secret-value | jq | put-secret-value");
    const rejected = /`ProviderClientRejectedError`[^]*?```bash\n([^]*?)```/.exec(errors)?.[1] ?? "";
    expect(rejected).toContain("read -r -s -p 'client_secret: ' CSECRET");
    expect(rejected).toContain(`CID="$CID" CSECRET="$CSECRET" jq '.client_id = env.CID | .client_secret = env.CSECRET'`);
    expect(rejected).toContain("aws secretsmanager put-secret-value --secret-id \"$S\" --secret-string file:///dev/stdin");
    // The merge of the pii_salt procedure: into the version read, then the check that it was still the current one.
    expect(rejected).toContain('--version-id "$V" --query SecretString --output text');
    expect(rejected).toContain('aws secretsmanager describe-secret --secret-id "$S" --query "VersionIdsToStages.[\\"$V\\", \\"$P\\"]" --output json');
    expect(rejected).toContain("unset CID CSECRET");
    expect(revoked).toMatch(/put the right ones back[^]*`ProviderClientRejectedError` under \[Function errors\]\(#function-errors\)/);
  });
});
