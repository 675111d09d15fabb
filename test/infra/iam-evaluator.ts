/**
 * Evaluates the IAM statements of a synthesized template against a request, for tests that check what a policy lets
 * a principal do: the action (with IAM's wildcards) and the condition operators the app writes. Resources and
 * principals are not evaluated: callers pass the statements of one role or one principal.
 */

/** An IAM policy statement as a synthesized template holds it. */
export interface PolicyStatement {
  readonly Sid?: string;
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource?: unknown;
  readonly Principal?: { readonly Service?: unknown; readonly AWS?: unknown };
  readonly Condition?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

/** The partition, region and account a template's pseudo parameters stand for. */
export interface PseudoParameters {
  readonly partition: string;
  readonly region: string;
  readonly account: string;
}

/** A request as IAM sees it. */
export interface IamRequest {
  readonly action: string;
  /** Its condition keys: a string for a single-valued key, an array for a multivalued one (dynamodb:LeadingKeys). */
  readonly context?: Readonly<Record<string, string | readonly string[]>>;
  /** Needed only when a condition value is built from pseudo parameters (`Ref`, `Fn::Join`). */
  readonly env?: PseudoParameters;
}

/** The operators evaluated: a set qualifier for multivalued keys, the base operator, `IfExists`. */
const OPERATOR = /^(ForAllValues:)?(StringEquals|ArnEquals|StringLike|ArnLike)(IfExists)?$/;

/**
 * Whether one of the statements allows the request. As in IAM, a key absent from the request fails a single-valued
 * operator unless it ends in IfExists, and satisfies ForAllValues.
 *
 * @throws Error on a Deny statement, an operator not evaluated here, or a multivalued key under a single-valued
 * operator: a new kind of policy must fail the test, never pass it unevaluated.
 */
export function allows(statements: readonly PolicyStatement[], request: IamRequest): boolean {
  // Every statement first: a Deny after the one that allows must fail the test too, not go unseen behind `some`.
  const denial = statements.find((statement) => statement.Effect !== "Allow");
  if (denial) throw new Error(`Effect ${denial.Effect} is not evaluated: ${JSON.stringify(denial)}`);
  return statements.some((statement) => {
    if (![statement.Action].flat().some((action) => globMatches(action, request.action))) return false;
    return Object.entries(statement.Condition ?? {}).every(([operator, block]) =>
      Object.entries(block).every(([key, expected]) => conditionHolds(operator, key, expected, request)),
    );
  });
}

function conditionHolds(operator: string, key: string, expected: unknown, request: IamRequest): boolean {
  const [, forAllValues, base, ifExists] = OPERATOR.exec(operator) ?? [];
  if (base === undefined) throw new Error(`condition operator ${operator} is not evaluated`);
  const values = [expected].flat().map((value) => resolveIn(value, request.env));
  const matches = (actual: string) => (base.endsWith("Like") ? values.some((pattern) => globMatches(pattern, actual)) : values.includes(actual));
  const actual = request.context?.[key];
  if (forAllValues !== undefined) return [actual ?? []].flat().every(matches);
  if (actual === undefined) return ifExists !== undefined;
  if (typeof actual !== "string") throw new Error(`${key} is multivalued: ${operator} needs a set qualifier`);
  return matches(actual);
}

/** IAM's wildcard match: `*` any run of characters, `?` one character. */
function globMatches(pattern: string, text: string): boolean {
  const regex = pattern
    .split("")
    .map((c) => (c === "*" ? ".*" : c === "?" ? "." : c.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${regex}$`).test(text);
}

/** A template value with the pseudo parameters of `env` substituted (strings, Ref to them, Fn::Join). */
function resolveIn(value: unknown, env: PseudoParameters | undefined): string {
  if (typeof value === "string") return value;
  const v = value as Record<string, unknown>;
  const pseudo: Record<string, string | undefined> = { "AWS::Partition": env?.partition, "AWS::Region": env?.region, "AWS::AccountId": env?.account };
  if (typeof v["Ref"] === "string" && pseudo[v["Ref"]] !== undefined) return pseudo[v["Ref"]] as string;
  if (Array.isArray(v["Fn::Join"])) {
    const [separator, parts] = v["Fn::Join"] as [string, unknown[]];
    return parts.map((part) => resolveIn(part, env)).join(separator);
  }
  throw new Error(`cannot resolve ${JSON.stringify(value)}${env === undefined ? " without env" : ""}`);
}
