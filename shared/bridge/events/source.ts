/**
 * The EventBridge `Source` the bridge may publish under, one rule for the tenants file (infra/tenant-config.ts), the
 * functions' EVENT_SOURCE (shared/aws/config.ts) and local mode's BRIDGE_EVENT_SOURCE (shared/cli/config.ts), so a
 * value set by hand is held to what synth accepts. Free of zod: the CLI's settings load before any command is chosen.
 */

/**
 * The rules a source must meet, each with the problem a source breaking it has, in the order they are checked: led by a
 * letter or digit, of at most 256 characters (EventBridge's limit), in either case as EventBridge takes it; outside
 * `aws.`, which EventBridge keeps for AWS services (every PutEvents entry under it is refused). No `/`, which
 * EventBridge would take: the stack names each registry schema `<source>@<type>`, and schema names take only letters,
 * digits and `- _ . @`. Patterns, so the tenants file's JSON Schema carries them too.
 */
export const EVENT_SOURCE_RULES: readonly { readonly pattern: RegExp; readonly problem: string }[] = [
  { pattern: /^[A-Za-z0-9][\w.-]{0,255}$/, problem: "must be an EventBridge source such as qashio.bridge" },
  { pattern: /^(?!aws\.)/, problem: "must not start with aws." },
];

/**
 * What is wrong with `source` (the first rule it breaks), undefined when nothing is.
 *
 * @example
 * eventSourceProblem("acme.qashio.bridge"); // undefined
 * eventSourceProblem("aws.qashio"); // "must not start with aws."
 */
export function eventSourceProblem(source: string): string | undefined {
  return EVENT_SOURCE_RULES.find((rule) => !rule.pattern.test(source))?.problem;
}
