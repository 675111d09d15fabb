import { Validations } from "aws-cdk-lib";
import type { TenantStack } from "./tenant-stack.js";

/**
 * cdk-nag AwsSolutions findings of a tenant stack that are accepted, each with its reason. Every id names one
 * finding (`Rule[Finding]`), so a new wildcard or a new queue without a reason still fails synth.
 */
export function acknowledgeTenantStackFindings(stack: TenantStack): void {
  for (const fn of [stack.pollTransactions, stack.pollCards, stack.rotateToken]) {
    // Only the policy BridgeFunctionRole routes these actions to: a wildcard in the role's default policy, whatever
    // its action, still fails synth.
    const policy = fn.role.noResourceLevelPolicy;
    if (policy === undefined) continue;
    Validations.of(policy).acknowledge({
      id: "AwsSolutions-IAM5[Resource::*]",
      reason:
        "This policy holds only actions without resource-level permissions (BridgeFunctionRole admits nothing else): " +
        "X-Ray's xray:PutTraceSegments and xray:PutTelemetryRecords, added by Tracing.ACTIVE for the Powertools Tracer.",
    });
  }
  for (const fn of [stack.pollTransactions, stack.pollCards]) {
    const arnToken = stack.resolve(fn.function.functionArn) as { "Fn::GetAtt": [string, string] };
    // On the one role every schedule uses (PollSchedules.role), not the stack: the same wildcard granted to any other
    // role still fails synth.
    Validations.of(stack.schedules.role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${arnToken["Fn::GetAtt"][0]}.Arn>:*]`,
      reason: `EventBridge Scheduler's role, shared by the tenant's schedules, may invoke the ${fn.node.id} function's ` +
        "versions and aliases (<function ARN>:*), as the LambdaInvoke target grants; the wildcard covers no other function.",
    });
  }
  for (const queue of Object.values(stack.deadLetterQueues)) {
    Validations.of(queue).acknowledge({
      id: "AwsSolutions-SQS3",
      reason:
        "This queue is itself a dead-letter queue (Lambda on-failure destination, Scheduler DLQ, EventBridge " +
        "target DLQ or event bus DLQ); cdk-nag only recognises queues used as another queue's redrive target.",
    });
  }
}
