import { Aws, Duration, RemovalPolicy, Tags } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import { Construct } from "constructs";
import { SECRET_TAGS } from "../../shared/aws/keys.js";

/**
 * When Secrets Manager runs the token rotation: daily, keeping an idle tenant's single-use refresh token (lifetime not
 * stated by the provider, spec 5.11; 30 days in the sandbox) from expiring. Not more often: every rotation adds a
 * secret version (Secrets Manager's AWSPENDING placeholder, even when the rotation skips), and with 15-minute access
 * tokens the pollers' 96 refreshes a day leave little room under the version quota (shared/aws/token-store.ts). At a
 * fixed hour with a one-hour window ({@link TOKEN_ROTATION_WINDOW}), so two rotations are 23 to 25 hours apart: with
 * `rate(1 day)` the window is the whole UTC day, and two could fall minutes apart across midnight.
 */
export const TOKEN_ROTATION_SCHEDULE = "cron(0 3 * * ? *)";
export const TOKEN_ROTATION_WINDOW = "1h";

const SECRETS_MANAGER_PRINCIPAL = "secretsmanager.amazonaws.com";

/** Properties of {@link TenantSecret}. */
export interface TenantSecretProps {
  /** Tenant id, named in the description and tagged (see SECRET_TAGS). */
  readonly tenantId: string;
  /**
   * Table holding the pollers' token lease, tagged on the secret so `authorize --secret-id` writes under that lease
   * (see SECRET_TAGS).
   */
  readonly leaseTableName: string;
  /** Customer-managed key encrypting the secret. */
  readonly encryptionKey: kms.IKey;
  /**
   * What happens to the secret when the stack is deleted.
   * @default RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE (it holds the only copy of the live refresh token; a failed
   * first deploy, which never stored one, removes it)
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * Secret actions of the runtime: read the token set, write a rotated refresh token as a new version, and count the
 * versions of the last day before a refresh (ListSecretVersionIds: no value is read). The rotation's own
 * DescribeSecret and UpdateSecretVersionStage come with {@link TenantSecret.addTokenRotation}.
 */
export const SECRET_RUNTIME_ACTIONS = ["secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue", "secretsmanager:ListSecretVersionIds"] as const;

/**
 * The tenant's provider credentials: JSON `{client_id, client_secret, refresh_token, pii_salt}`.
 * Created with a generated `pii_salt` and empty credentials; onboarding fills them in.
 */
export class TenantSecret extends Construct {
  /** The secret. */
  public readonly secret: secretsmanager.Secret;

  constructor(scope: Construct, id: string, props: TenantSecretProps) {
    super(scope, id);
    // The id "Secret" and generateSecretString must never change on deployed stacks: a new id orphans the secret, and
    // CloudFormation regenerates the whole value (refresh_token, client credentials, pii_salt) when
    // GenerateSecretString changes. test/infra pins both.
    this.secret = new secretsmanager.Secret(this, "Secret", {
      description:
        `qashio-bridge tenant ${props.tenantId}: provider OAuth credentials. Onboarding: run "npm run bridge -- ` +
        `authorize --secret-id <this ARN>" with QASHIO_BASE_URL set to the stack output ProviderBaseUrl and ` +
        `QASHIO_CLIENT_ID and QASHIO_CLIENT_SECRET in the environment; it writes ` +
        `client_id, client_secret and the first refresh_token (README, Onboard). Do not write this JSON by hand: ` +
        `pii_salt must stay unchanged (hashed identifiers depend on it).`,
      encryptionKey: props.encryptionKey,
      generateSecretString: {
        secretStringTemplate: JSON.stringify({ client_id: "", client_secret: "", refresh_token: "" }),
        generateStringKey: "pii_salt",
        passwordLength: 48,
        excludePunctuation: true,
      },
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    });
    // Tags change in place: neither the value nor the secret is replaced on a deployed stack.
    Tags.of(this.secret).add(SECRET_TAGS.tenant, props.tenantId);
    Tags.of(this.secret).add(SECRET_TAGS.leaseTable, props.leaseTableName);
  }

  /** Grants the runtime's secret actions on this secret only. */
  grantRuntimeAccess(grantee: iam.IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: [...SECRET_RUNTIME_ACTIONS], resources: [this.secret.secretArn] }),
    );
  }

  /**
   * Schedules the token rotation function. Not rotated on deploy: a fresh secret has no refresh token yet.
   *
   * The schedule lets `secretsmanager.amazonaws.com` invoke the function through a Lambda permission without any
   * source condition; it gets `SourceAccount` (this stack's account), the condition AWS documents for rotation
   * functions against the confused deputy. The handler also refuses a rotation event for any other secret.
   */
  addTokenRotation(rotationFunction: lambda.IFunction): secretsmanager.RotationSchedule {
    // Built on a view of the secret without its key (same ARN, same construct path as addRotationSchedule, so the same
    // logical id): given the key, RotationSchedule grants the function grantEncryptDecrypt through Secrets Manager in the
    // key policy (kms:Encrypt, kms:ReEncrypt*, kms:GenerateDataKey* to the role by ARN), beyond what the rotation needs.
    // Its key use is granted with the runtime's (TenantKey.grantDataUse), as for the pollers, which write the secret too.
    const keyless = secretsmanager.Secret.fromSecretAttributes(this, "RotatedSecret", { secretCompleteArn: this.secret.secretArn });
    const schedule = new secretsmanager.RotationSchedule(this.secret, "TokenRotation", {
      secret: keyless,
      rotationLambda: rotationFunction,
      automaticallyAfter: Duration.days(1),
      rotateImmediatelyOnUpdate: false,
    });
    // What RotationSchedule does on the secret it is given, which the keyless view (no resource policy) cannot hold.
    this.secret.denyAccountRootDelete();
    // The construct writes rate() expressions only; the rules themselves take a cron() and a window.
    (schedule.node.defaultChild as secretsmanager.CfnRotationSchedule).addPropertyOverride("RotationRules", {
      ScheduleExpression: TOKEN_ROTATION_SCHEDULE,
      Duration: TOKEN_ROTATION_WINDOW,
    });
    const permissions = rotationFunction.node
      .findAll()
      .filter((c): c is lambda.CfnPermission => c instanceof lambda.CfnPermission && c.principal === SECRETS_MANAGER_PRINCIPAL);
    // CDK's RotationSchedule creates it through grantInvoke; if that ever changes, fail synth rather than go without.
    if (permissions.length === 0) throw new Error("RotationSchedule created no Lambda permission for Secrets Manager to condition");
    // The pseudo parameter even in a stack pinned to an account: a changed SourceAccount replaces the permission.
    for (const permission of permissions) permission.sourceAccount ??= Aws.ACCOUNT_ID;
    return schedule;
  }
}
