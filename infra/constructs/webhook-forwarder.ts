import { ArnFormat, Duration, Fn, SecretValue, Stack } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as events from "aws-cdk-lib/aws-events";
import * as targets from "aws-cdk-lib/aws-events-targets";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import type { WebhookAuthConfig, WebhookConfig } from "../webhook-schema.js";

/** Properties of {@link WebhookForwarder}. */
export interface WebhookForwarderProps {
  /** Tenant id: only this tenant's events are forwarded. */
  readonly tenantId: string;
  /** Bus carrying the tenant's events. */
  readonly bus: events.IEventBus;
  /** EventBridge `source` of the bridge's events. */
  readonly eventSource: string;
  /** The webhook: URL, event types, authentication (secrets by ARN), retry settings. */
  readonly webhook: WebhookConfig;
  /** Queue receiving events that could not be delivered after the retries. */
  readonly deadLetterQueue: sqs.IQueue;
}

/** A dynamic reference resolved by CloudFormation at deploy time: the value never enters the template. */
function secretValue(ref: { secretArn: string; jsonField?: string | undefined }): SecretValue {
  return SecretValue.secretsManager(ref.secretArn, ref.jsonField === undefined ? {} : { jsonField: ref.jsonField });
}

function authorization(auth: WebhookAuthConfig): events.Authorization {
  switch (auth.type) {
    case "apiKey":
      return events.Authorization.apiKey(auth.headerName, secretValue(auth.value));
    case "basic":
      return events.Authorization.basic(auth.username, secretValue(auth.password));
    case "oauthClientCredentials":
      return events.Authorization.oauth({
        authorizationEndpoint: auth.tokenUrl,
        httpMethod: events.HttpMethod.POST,
        clientId: auth.clientId,
        clientSecret: secretValue(auth.clientSecret),
        bodyParameters: {
          grant_type: events.HttpParameter.fromString("client_credentials"),
          ...(auth.scope === undefined ? {} : { scope: events.HttpParameter.fromString(auth.scope) }),
        },
      });
  }
}

/**
 * ARN pattern of every rule on the bus named `busName` in the stack's account and region. A rule of the default bus
 * has no bus in its ARN (`rule/<name>`), a rule of any other bus does (`rule/<bus>/<name>`).
 */
function busRulesArn(scope: Construct, busName: string): string {
  return Stack.of(scope).formatArn({
    service: "events",
    resource: "rule",
    resourceName: busName === "default" ? "*" : `${busName}/*`,
    arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
  });
}

/**
 * Forwards chosen event types of one tenant to one HTTPS URL: an EventBridge rule (detail-type filter),
 * a connection holding the credentials, an API destination, a retry policy and a DLQ.
 */
export class WebhookForwarder extends Construct {
  /** Rule selecting the events. */
  public readonly rule: events.Rule;
  /** Connection (EventBridge keeps its credentials in a Secrets Manager secret it manages). */
  public readonly connection: events.Connection;
  /** API destination: URL, method and rate limit. */
  public readonly destination: events.ApiDestination;
  /** Role EventBridge takes to invoke the destination. */
  public readonly role: iam.Role;
  /** Name of the bus the rule is on: part of the rule's metric dimensions. */
  private readonly busName: string;

  constructor(scope: Construct, id: string, props: WebhookForwarderProps) {
    super(scope, id);
    const hook = props.webhook;
    this.busName = props.bus.eventBusName;
    this.connection = new events.Connection(this, "Connection", {
      description: `qashio-bridge ${props.tenantId} webhook ${hook.name}`,
      authorization: authorization(hook.auth),
    });
    this.destination = new events.ApiDestination(this, "Destination", {
      description: `qashio-bridge ${props.tenantId} webhook ${hook.name}`,
      connection: this.connection,
      endpoint: hook.url,
      httpMethod: events.HttpMethod.POST,
      rateLimitPerSecond: hook.rateLimitPerSecond,
    });
    // AWS's confused deputy guidance for EventBridge (user guide, "Cross-service confused deputy prevention"): for event
    // bus rule targets `aws:SourceArn` is the rule's ARN, with `aws:SourceAccount` the rule's account. Not this rule's
    // ARN: the rule names the role, so the role naming the rule (Fn::GetAtt) would be a dependency cycle, and a fixed
    // rule name would replace every deployed rule. Any rule of the tenant's bus in this account, so a rule of another
    // account (or of another bus) cannot have EventBridge take it.
    this.role = new iam.Role(this, "Role", {
      description: `qashio-bridge ${props.tenantId}: EventBridge delivering to webhook ${hook.name}`,
      assumedBy: new iam.ServicePrincipal("events.amazonaws.com", {
        conditions: {
          StringEquals: { "aws:SourceAccount": Stack.of(this).account },
          ArnLike: { "aws:SourceArn": busRulesArn(this, this.busName) },
        },
      }),
    });
    this.rule = new events.Rule(this, "Rule", {
      eventBus: props.bus,
      description: `qashio-bridge ${props.tenantId}: ${hook.eventTypes.join(", ")} to webhook ${hook.name}`,
      eventPattern: {
        source: [props.eventSource],
        detailType: [...hook.eventTypes],
        detail: { tenant: [props.tenantId] },
      },
      targets: [
        new targets.ApiDestination(this.destination, {
          eventRole: this.role,
          deadLetterQueue: props.deadLetterQueue,
          retryAttempts: hook.retryAttempts,
          maxEventAge: Duration.hours(hook.maxEventAgeHours),
        }),
      ],
    });
    // The rule moves to the role only once its policy (added by the target) exists: EventBridge sends a delivery it
    // may not make (NO_PERMISSIONS) to the DLQ untried, so a deploy replacing the role would otherwise dead-letter events.
    this.rule.node.addDependency(this.role);
  }

  /**
   * Events EventBridge could neither deliver nor write to the DLQ (`AWS/Events` `InvocationsFailedToBeSentToDlq`):
   * dropped for good. Reported only when not zero.
   *
   * @example
   * forwarder.metricInvocationsFailedToBeSentToDlq({ period: Duration.minutes(5) });
   */
  metricInvocationsFailedToBeSentToDlq(options: cloudwatch.MetricOptions = {}): cloudwatch.Metric {
    // AWS reports a rule of the default bus by RuleName alone, a rule of any other bus with EventBusName too. There the
    // rule's Ref (ruleName) is its physical id, `<bus>|<rule name>`, where the metric's RuleName is the name alone.
    const onDefault = this.busName === "default";
    const bus: Record<string, string> = onDefault ? {} : { EventBusName: this.busName };
    const ruleName = onDefault ? this.rule.ruleName : Fn.select(1, Fn.split("|", this.rule.ruleName));
    return new cloudwatch.Metric({
      namespace: "AWS/Events",
      metricName: "InvocationsFailedToBeSentToDlq",
      dimensionsMap: { RuleName: ruleName, ...bus },
      statistic: "Sum",
      ...options,
    });
  }
}
