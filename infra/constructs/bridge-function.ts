import { Annotations, Duration, RemovalPolicy } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { METRIC_NAMESPACE, METRIC_SERVICE } from "./bridge-metrics.js";
import type { PiiMode } from "../../shared/bridge/pii.js";

/**
 * ESM bundles run code (AWS SDK, Powertools Tracer) that calls `require`; esbuild's ESM output has none,
 * so every bundle starts by defining it.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __bridgeCreateRequire } from 'module'; const require = __bridgeCreateRequire(import.meta.url);";

/**
 * Bundle the AWS SDK v3 into each function instead of using the copy in the nodejs24.x runtime:
 * the version is pinned to the one the tests ran against; docs/spec-gaps.md ("AWS SDK: bundled, not the runtime's
 * copy") gives the measured size and cold-start trade-off.
 */
export const BUNDLE_AWS_SDK = true;

/**
 * On-failure destination granting only sqs:SendMessage on the queue; the key is granted separately
 * (TenantKey.grantDataUse), where SqsDestination's grant would add `kms:GenerateDataKey*` and `kms:ReEncrypt*`.
 */
export class QueueOnFailure implements lambda.IDestination {
  constructor(private readonly queue: sqs.IQueue) {}

  bind(_scope: Construct, fn: lambda.IFunction): lambda.DestinationConfig {
    fn.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ["sqs:SendMessage"], resources: [this.queue.queueArn] }),
    );
    return { destination: this.queue.queueArn };
  }
}

/**
 * Actions a bridge function's role may hold on `Resource: "*"`, as none has resource-level permissions: X-Ray's
 * (added by `Tracing.ACTIVE`).
 */
const NO_RESOURCE_LEVEL_ACTIONS: readonly string[] = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"];

/**
 * Actions CDK constructs grant that no bridge function calls: Secrets Manager's GetRandomPassword on `"*"`, which
 * RotationSchedule gives every rotation function for generating a password; rotate-token refreshes a token instead.
 */
const UNUSED_ACTIONS: readonly string[] = ["secretsmanager:GetRandomPassword"];

/** Whether `statement` allows some of `actions` and nothing else (a Deny or a NotAction never does). */
function allowsOnly(statement: iam.PolicyStatement, actions: readonly string[]): boolean {
  return (
    statement.effect === iam.Effect.ALLOW &&
    statement.notActions.length === 0 &&
    statement.actions.length > 0 &&
    statement.actions.every((action) => actions.includes(action))
  );
}

/** An Allow of {@link NO_RESOURCE_LEVEL_ACTIONS} only, on `"*"` only. */
function isNoResourceLevelStatement(statement: iam.PolicyStatement): boolean {
  return (
    allowsOnly(statement, NO_RESOURCE_LEVEL_ACTIONS) &&
    statement.notResources.length === 0 &&
    statement.resources.length === 1 &&
    statement.resources[0] === "*"
  );
}

/**
 * A bridge function's execution role. Statements that only allow {@link NO_RESOURCE_LEVEL_ACTIONS} on `"*"` go to a
 * policy of their own ({@link BridgeFunctionRole.noResourceLevelPolicy}), everything else to the default policy, so
 * the cdk-nag acknowledgement of `Resource::*` can name that one policy: any other wildcard, whatever its action,
 * lands in the default policy and fails synth. A statement made only of {@link UNUSED_ACTIONS} is left out, said at
 * synth as an info on the role (one that also holds another action is kept whole).
 */
export class BridgeFunctionRole extends iam.Role {
  private static readonly NO_RESOURCE_LEVEL_POLICY_ID = "NoResourceLevelActions";

  /** The policy holding the `"*"` statements of {@link NO_RESOURCE_LEVEL_ACTIONS}, once one was added. */
  get noResourceLevelPolicy(): iam.Policy | undefined {
    return this.node.tryFindChild(BridgeFunctionRole.NO_RESOURCE_LEVEL_POLICY_ID) as iam.Policy | undefined;
  }

  override addToPrincipalPolicy(statement: iam.PolicyStatement): iam.AddToPrincipalPolicyResult {
    if (allowsOnly(statement, UNUSED_ACTIONS)) {
      // An info, not a warning: nothing to fix, and a strict synth fails on warnings.
      Annotations.of(this).addInfo(
        `Left out of this role: ${statement.actions.join(", ")} on ${statement.resources.join(", ")}, granted by a CDK ` +
          "construct (RotationSchedule's to every rotation function) though no bridge function calls it",
      );
      return { statementAdded: false };
    }
    if (!isNoResourceLevelStatement(statement)) return super.addToPrincipalPolicy(statement);
    const policy = this.noResourceLevelPolicy ?? new iam.Policy(this, BridgeFunctionRole.NO_RESOURCE_LEVEL_POLICY_ID, { roles: [this] });
    policy.addStatements(statement);
    return { statementAdded: true, policyDependable: policy };
  }
}

/** Environment of every bridge function: the variables shared/aws/config.ts validates (its Powertools ones left to their defaults). */
export interface BridgeFunctionEnvironment {
  readonly TENANT_ID: string;
  readonly QASHIO_BASE_URL: string;
  readonly TABLE_NAME: string;
  readonly SECRET_ID: string;
  readonly EVENT_BUS_NAME: string;
  readonly EVENT_SOURCE: string;
  readonly PII_MODE: PiiMode;
  readonly EMIT_CARD_CREATED: "true" | "false";
  readonly CARD_DETAILS: "true" | "false";
  readonly CYCLE_BUDGET_MS?: string;
}

/** Properties of {@link BridgeFunction}. */
export interface BridgeFunctionProps {
  /** Absolute path of the handler file (exports `handler`). */
  readonly entry: string;
  /** Short description shown in the console. */
  readonly description: string;
  /** The function's environment (Powertools variables are added). */
  readonly environment: BridgeFunctionEnvironment;
  /**
   * Maximum run time of one invocation.
   * @default Duration.minutes(5)
   */
  readonly timeout?: Duration;
  /**
   * Concurrent executions reserved (and capped); 1 keeps one tenant's cycles of this kind from overlapping.
   * @default - not reserved
   */
  readonly reservedConcurrentExecutions?: number;
  /**
   * Where asynchronous invocations that failed or expired are sent.
   * @default - no on-failure destination
   */
  readonly onFailure?: sqs.IQueue;
  /**
   * How long an asynchronous invocation may wait (e.g. throttled behind a running cycle) before it is dropped
   * to the on-failure destination; only used with `onFailure`.
   * @default Duration.hours(6)
   */
  readonly maxEventAge?: Duration;
  /**
   * Memory size in MB.
   * @default 512
   */
  readonly memorySize?: number;
  /**
   * Customer-managed key of the function's log group (its policy must let CloudWatch Logs use it).
   * @default - CloudWatch Logs' own encryption
   */
  readonly logEncryptionKey?: kms.IKey;
  /**
   * Days CloudWatch keeps the function's logs.
   * @default logs.RetentionDays.THREE_MONTHS
   */
  readonly logRetention?: logs.RetentionDays;
}

/**
 * One bridge Lambda function: nodejs24.x on arm64, bundled by the local esbuild as minified ESM with
 * source maps, X-Ray tracing, its own log group, and a role with only what it is granted.
 */
export class BridgeFunction extends Construct {
  /** The function. */
  public readonly function: nodejs.NodejsFunction;
  /** Its log group (explicit, so retention and encryption are ours). */
  public readonly logGroup: logs.LogGroup;
  /** Its execution role (no managed policies). */
  public readonly role: BridgeFunctionRole;

  constructor(scope: Construct, id: string, props: BridgeFunctionProps) {
    super(scope, id);
    this.logGroup = new logs.LogGroup(this, "Logs", {
      retention: props.logRetention ?? logs.RetentionDays.THREE_MONTHS,
      encryptionKey: props.logEncryptionKey,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.role = new BridgeFunctionRole(this, "Role", {
      assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
      description: `${props.description} (execution role)`,
    });
    // Only this function's log group, instead of AWSLambdaBasicExecutionRole's logs:* on every group
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["logs:CreateLogStream", "logs:PutLogEvents"],
        resources: [this.logGroup.logGroupArn],
      }),
    );
    const { CYCLE_BUDGET_MS, ...required } = props.environment;
    this.function = new nodejs.NodejsFunction(this, "Function", {
      entry: props.entry,
      handler: "handler",
      description: props.description,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout ?? Duration.minutes(5),
      role: this.role,
      logGroup: this.logGroup,
      tracing: lambda.Tracing.ACTIVE,
      reservedConcurrentExecutions: props.reservedConcurrentExecutions,
      environment: {
        ...required,
        ...(CYCLE_BUDGET_MS === undefined ? {} : { CYCLE_BUDGET_MS }),
        POWERTOOLS_SERVICE_NAME: METRIC_SERVICE,
        POWERTOOLS_METRICS_NAMESPACE: METRIC_NAMESPACE,
        // source maps are only useful if Node applies them to stack traces
        NODE_OPTIONS: "--enable-source-maps",
      },
      bundling: {
        format: nodejs.OutputFormat.ESM,
        mainFields: ["module", "main"],
        banner: ESM_REQUIRE_BANNER,
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        target: "node24",
        bundleAwsSDK: BUNDLE_AWS_SDK,
        forceDockerBundling: false,
      },
      ...(props.onFailure
        ? {
            onFailure: new QueueOnFailure(props.onFailure),
            // the next scheduled cycle retries; Lambda's own async retries would only pile up behind the lease
            retryAttempts: 0,
            maxEventAge: props.maxEventAge ?? Duration.hours(6),
          }
        : {}),
    });
  }
}
