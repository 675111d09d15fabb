import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { App, type CfnElement, Duration, Stack } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import { RetentionDays } from "aws-cdk-lib/aws-logs";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { describe, expect, it } from "vitest";
import { BridgeFunction, ESM_REQUIRE_BANNER } from "../../infra/constructs/bridge-function.js";
import { FIXTURE_FUNCTIONS_DIR, testApp } from "./helpers.js";

const environment = {
  TENANT_ID: "acme",
  QASHIO_BASE_URL: "https://api.provider.test",
  TABLE_NAME: "table",
  SECRET_ID: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:s",
  EVENT_BUS_NAME: "bus",
  EVENT_SOURCE: "qashio.bridge",
  PII_MODE: "hash",
  EMIT_CARD_CREATED: "true",
  CARD_DETAILS: "false",
} as const;

describe("BridgeFunction", () => {
  // the tests that really bundle (this and the AWS SDK one): with the local esbuild, no Docker
  it("bundles minified ESM with the createRequire banner and a source map", () => {
    const app = new App({ builtinCloudFormationValidation: false });
    const stack = new Stack(app, "Bundling");
    new BridgeFunction(stack, "Fn", {
      entry: join(FIXTURE_FUNCTIONS_DIR, "uses-require.ts"),
      description: "bundling check",
      environment,
    });
    const assembly = app.synth();
    const assetDirs = readdirSync(assembly.directory).filter((d) => d.startsWith("asset."));
    expect(assetDirs).toHaveLength(1);
    const dir = join(assembly.directory, assetDirs[0] as string);
    const code = readFileSync(join(dir, "index.mjs"), "utf8");
    expect(code.startsWith(ESM_REQUIRE_BANNER)).toBe(true);
    expect(code).toMatch(/\/\/# sourceMappingURL=index\.mjs\.map\s*$/);
    expect(existsSync(join(dir, "index.mjs.map"))).toBe(true);
    // docs/spec-gaps.md (Source maps): the map names the sources, without shipping their text in the function's code
    expect(JSON.parse(readFileSync(join(dir, "index.mjs.map"), "utf8"))).not.toHaveProperty("sourcesContent");
    expect(code.split("\n").length).toBeLessThan(6);
    // The bundle runs in plain Node (vitest's module runner would lend it a `require`): its require() call finds the
    // `require` the banner defines
    const run = `const { handler } = await import(${JSON.stringify(pathToFileURL(join(dir, "index.mjs")).href)}); console.log(await handler());`;
    const output = execFileSync(process.execPath, ["--input-type=module", "-e", run], { encoding: "utf8" });
    expect(output.trim()).toBe(createHash("sha256").update("x").digest("hex"));
    Template.fromStack(stack).hasResourceProperties("AWS::Lambda::Function", {
      Handler: "index.handler",
      Runtime: "nodejs24.x",
      Environment: { Variables: { ...environment, NODE_OPTIONS: "--enable-source-maps", POWERTOOLS_METRICS_NAMESPACE: "QashioBridge", POWERTOOLS_SERVICE_NAME: "qashio-bridge" } },
    });
  });

  it("bundles the AWS SDK into the function itself, from its ES module build (docs/spec-gaps.md, AWS SDK: bundled)", () => {
    const app = new App({ builtinCloudFormationValidation: false });
    const stack = new Stack(app, "BundledSdk");
    new BridgeFunction(stack, "Fn", { entry: join(FIXTURE_FUNCTIONS_DIR, "uses-aws-sdk.ts"), description: "sdk check", environment });
    const assembly = app.synth();
    const dir = join(assembly.directory, readdirSync(assembly.directory).find((d) => d.startsWith("asset.")) ?? "");
    const sources = (JSON.parse(readFileSync(join(dir, "index.mjs.map"), "utf8")) as { sources: string[] }).sources;
    // esbuild reads a package's "module" field before its "main" only when told to: for platform node it prefers "main"
    expect(sources.filter((s) => s.includes("@aws-sdk/util-dynamodb/")).length).toBeGreaterThan(0);
    expect(sources.filter((s) => /@aws-sdk\/util-dynamodb\/dist-cjs\//.test(s))).toEqual([]);
    expect(sources.filter((s) => /@aws-sdk\/util-dynamodb\/dist-es\//.test(s)).length).toBeGreaterThan(0);
    // The asset runs with nothing beside it: no node_modules to resolve an external @aws-sdk/* import from
    const run = `const { handler } = await import(${JSON.stringify(pathToFileURL(join(dir, "index.mjs")).href)}); console.log(await handler());`;
    const output = execFileSync(process.execPath, ["--input-type=module", "-e", run], { encoding: "utf8", cwd: dir });
    expect(JSON.parse(output.trim())).toEqual({ cents: { N: "1" } });
  });

  it("gives its role only its own log group, no managed policy", () => {
    const app = testApp();
    const stack = new Stack(app, "Role");
    new BridgeFunction(stack, "Fn", { entry: join(FIXTURE_FUNCTIONS_DIR, "poll-cards.ts"), description: "role check", environment });
    const template = Template.fromStack(stack);
    // the documented defaults: 512 MB, five minutes, logs kept three months
    template.hasResourceProperties("AWS::Lambda::Function", { Runtime: "nodejs24.x", Architectures: ["arm64"], MemorySize: 512, Timeout: 300 });
    template.hasResourceProperties("AWS::Logs::LogGroup", { RetentionInDays: 90 });
    // a stack delete deletes the function's logs with it (docs/spec-gaps.md, Retention): the kept resources are others
    template.hasResource("AWS::Logs::LogGroup", { DeletionPolicy: "Delete", UpdateReplacePolicy: "Delete" });
    // described as the function's, so the console tells whose role it is
    template.hasResourceProperties("AWS::IAM::Role", { Description: "role check (execution role)", ManagedPolicyArns: Match.absent() });
    template.hasResourceProperties("AWS::IAM::Policy", {
      PolicyDocument: {
        Statement: [
          { Action: ["logs:CreateLogStream", "logs:PutLogEvents"], Effect: "Allow", Resource: { "Fn::GetAtt": [Match.stringLikeRegexp("^FnLogs"), "Arn"] } },
        ],
      },
    });
    // X-Ray has no resource-level permissions: its "*" lives in a policy of its own, the one cdk-nag may accept
    template.hasResourceProperties("AWS::IAM::Policy", {
      PolicyName: Match.stringLikeRegexp("NoResourceLevelActions"),
      PolicyDocument: { Statement: [{ Action: ["xray:PutTraceSegments", "xray:PutTelemetryRecords"], Effect: "Allow", Resource: "*" }] },
    });
  });

  it("sends a failed or expired asynchronous invocation to its on-failure queue without retrying, after six hours by default", () => {
    const app = testApp();
    const stack = new Stack(app, "OnFailure");
    const queue = new sqs.Queue(stack, "Failed");
    new BridgeFunction(stack, "Fn", { entry: join(FIXTURE_FUNCTIONS_DIR, "poll-cards.ts"), description: "on failure", environment, onFailure: queue });
    Template.fromStack(stack).hasResourceProperties("AWS::Lambda::EventInvokeConfig", {
      MaximumEventAgeInSeconds: 21_600,
      MaximumRetryAttempts: 0,
      DestinationConfig: { OnFailure: { Destination: { "Fn::GetAtt": [Match.stringLikeRegexp("^Failed"), "Arn"] } } },
    });
  });

  it("takes the memory size, timeout, reserved concurrency, log retention and log key it is given over its defaults", () => {
    const app = testApp();
    const stack = new Stack(app, "Sized");
    const logKey = new kms.Key(stack, "LogKey");
    new BridgeFunction(stack, "Fn", {
      entry: join(FIXTURE_FUNCTIONS_DIR, "poll-cards.ts"),
      description: "sized",
      environment,
      memorySize: 1024,
      timeout: Duration.seconds(90),
      reservedConcurrentExecutions: 1,
      logRetention: RetentionDays.ONE_WEEK,
      logEncryptionKey: logKey,
    });
    const template = Template.fromStack(stack);
    template.hasResourceProperties("AWS::Lambda::Function", { MemorySize: 1024, Timeout: 90, ReservedConcurrentExecutions: 1 });
    template.hasResourceProperties("AWS::Logs::LogGroup", { RetentionInDays: 7, KmsKeyId: { "Fn::GetAtt": [Match.stringLikeRegexp("^LogKey"), "Arn"] } });
  });

  it("routes only Allow statements of actions without resource-level permissions on * to that policy", () => {
    const app = testApp();
    const stack = new Stack(app, "Routing");
    const fn = new BridgeFunction(stack, "Fn", { entry: join(FIXTURE_FUNCTIONS_DIR, "poll-cards.ts"), description: "routing", environment });
    fn.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ["xray:PutTelemetryRecords"], resources: ["*"] }));
    fn.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ["xray:PutTraceSegments", "secretsmanager:GetSecretValue"], resources: ["*"] }));
    fn.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ["xray:PutTraceSegments"], resources: ["arn:aws:xray:eu-west-1:1:group/x", "*"] }));
    const policies = Template.fromStack(stack).findResources("AWS::IAM::Policy") as Record<
      string,
      { Properties: { PolicyDocument: { Statement: { Action: unknown }[] } } }
    >;
    const [noResourceId, defaultId] = [/^FnRoleNoResourceLevelActions/, /^FnRoleDefaultPolicy/].map((re) => Object.keys(policies).find((id) => re.test(id)) ?? "");
    expect(policies[noResourceId ?? ""]?.Properties.PolicyDocument.Statement.map((st) => st.Action)).toEqual([
      ["xray:PutTraceSegments", "xray:PutTelemetryRecords"],
      "xray:PutTelemetryRecords",
    ]);
    const defaults = JSON.stringify(policies[defaultId ?? ""]);
    expect(defaults).toContain("secretsmanager:GetSecretValue");
    expect(defaults).toContain("arn:aws:xray:eu-west-1:1:group/x");
  });

  it("keeps in the default policy an X-Ray statement that is a Deny, or that names a resource besides or instead of *", () => {
    const app = testApp();
    const stack = new Stack(app, "Kept");
    const fn = new BridgeFunction(stack, "Fn", { entry: join(FIXTURE_FUNCTIONS_DIR, "poll-cards.ts"), description: "kept", environment });
    const group = "arn:aws:xray:eu-west-1:1:group/x";
    fn.role.addToPrincipalPolicy(new iam.PolicyStatement({ effect: iam.Effect.DENY, actions: ["xray:PutTraceSegments"], resources: ["*"] }));
    fn.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ["xray:PutTelemetryRecords"], resources: ["*", group] }));
    fn.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ["xray:PutTraceSegments"], resources: [group] }));
    // a Deny of an action no bridge function calls is no grant to leave out
    const deny = fn.role.addToPrincipalPolicy(new iam.PolicyStatement({ effect: iam.Effect.DENY, actions: ["secretsmanager:GetRandomPassword"], resources: ["*"] }));
    expect(deny.statementAdded).toBe(true);
    const policies = Template.fromStack(stack).findResources("AWS::IAM::Policy") as Record<
      string,
      { Properties: { PolicyDocument: { Statement: { Effect: string; Action: unknown; Resource: unknown }[] } } }
    >;
    const statementsOf = (re: RegExp) => Object.entries(policies).filter(([id]) => re.test(id)).flatMap(([, p]) => p.Properties.PolicyDocument.Statement);
    // the function's own X-Ray grant only
    expect(statementsOf(/^FnRoleNoResourceLevelActions/)).toEqual([
      { Action: ["xray:PutTraceSegments", "xray:PutTelemetryRecords"], Effect: "Allow", Resource: "*" },
    ]);
    expect(statementsOf(/^FnRoleDefaultPolicy/)).toEqual(
      expect.arrayContaining([
        { Action: "xray:PutTraceSegments", Effect: "Deny", Resource: "*" },
        { Action: "xray:PutTelemetryRecords", Effect: "Allow", Resource: ["*", group] },
        { Action: "xray:PutTraceSegments", Effect: "Allow", Resource: group },
        { Action: "secretsmanager:GetRandomPassword", Effect: "Deny", Resource: "*" },
      ]),
    );
  });

  it("leaves out a statement of only actions no bridge function calls (RotationSchedule's GetRandomPassword on *), and keeps any other", () => {
    const app = testApp();
    const stack = new Stack(app, "Unused");
    const fn = new BridgeFunction(stack, "Fn", { entry: join(FIXTURE_FUNCTIONS_DIR, "poll-cards.ts"), description: "unused", environment });
    const dropped = fn.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ["secretsmanager:GetRandomPassword"], resources: ["*"] }));
    expect(dropped.statementAdded).toBe(false);
    // with an action the code may call, the statement stays whole: nothing is taken out of a statement silently
    fn.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ["secretsmanager:GetRandomPassword", "secretsmanager:GetSecretValue"], resources: ["arn:aws:secretsmanager:eu-west-1:1:secret:s"] }));
    const text = JSON.stringify(Template.fromStack(stack).findResources("AWS::IAM::Policy"));
    expect(text.match(/secretsmanager:GetRandomPassword/g)).toHaveLength(1);
    expect(text).toContain("secretsmanager:GetSecretValue");
  });

  it("leaves out no statement of another action alone: each Secrets Manager action a rotation function is given stays", () => {
    const app = testApp();
    const stack = new Stack(app, "Others");
    const fn = new BridgeFunction(stack, "Fn", { entry: join(FIXTURE_FUNCTIONS_DIR, "poll-cards.ts"), description: "others", environment });
    const others = ["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue", "secretsmanager:UpdateSecretVersionStage"];
    for (const action of others) expect(fn.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: [action], resources: ["*"] })).statementAdded).toBe(true);
    const text = JSON.stringify(Template.fromStack(stack).findResources("AWS::IAM::Policy"));
    for (const action of others) expect(text).toContain(action);
  });

  it("says at synth which actions it left out and why, as an info that fails no strict synth; nothing for a statement kept whole", () => {
    const annotationsWith = (actions: string[]) => {
      const app = testApp();
      const stack = new Stack(app, "Said");
      const fn = new BridgeFunction(stack, "Fn", { entry: join(FIXTURE_FUNCTIONS_DIR, "poll-cards.ts"), description: "said", environment });
      fn.role.addToPrincipalPolicy(new iam.PolicyStatement({ actions, resources: ["*"] }));
      return Annotations.fromStack(stack);
    };
    const dropped = annotationsWith(["secretsmanager:GetRandomPassword"]);
    dropped.hasInfo("/Said/Fn/Role", Match.stringLikeRegexp("^Left out of this role: secretsmanager:GetRandomPassword on \\*, .*no bridge function calls"));
    expect(dropped.findWarning("*", Match.anyValue())).toEqual([]);
    expect(dropped.findError("*", Match.anyValue())).toEqual([]);
    expect(annotationsWith(["secretsmanager:GetRandomPassword", "secretsmanager:GetSecretValue"]).findInfo("*", Match.anyValue())).toEqual([]);
  });

  it("leaves out no statement without actions: IAM's own check refuses it at synth instead of it vanishing with an info", () => {
    const app = testApp();
    const stack = new Stack(app, "Empty");
    const fn = new BridgeFunction(stack, "Fn", { entry: join(FIXTURE_FUNCTIONS_DIR, "poll-cards.ts"), description: "empty", environment });
    expect(fn.role.addToPrincipalPolicy(new iam.PolicyStatement({ resources: ["*"] })).statementAdded).toBe(true);
    expect(() => app.synth()).toThrow(/Fn\/Role\/DefaultPolicy\] A PolicyStatement must specify at least one 'action'/);
  });

  it("hands a grant of X-Ray on * the policy it went to, so what the grant is applied before waits for that policy", () => {
    const app = testApp();
    const stack = new Stack(app, "Granted");
    const fn = new BridgeFunction(stack, "Fn", { entry: join(FIXTURE_FUNCTIONS_DIR, "poll-cards.ts"), description: "granted", environment });
    const grant = iam.Grant.addToPrincipal({ grantee: fn.role, actions: ["xray:PutTraceSegments"], resourceArns: ["*"] });
    const waiting = new sqs.Queue(stack, "Waiting");
    grant.applyBefore(waiting);
    const policyId = stack.getLogicalId(fn.role.noResourceLevelPolicy?.node.defaultChild as CfnElement);
    Template.fromStack(stack).hasResource("AWS::SQS::Queue", { DependsOn: Match.arrayWith([policyId]) });
  });
});
