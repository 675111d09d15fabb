import { describe, expect, it } from "vitest";
import { allows, type PolicyStatement } from "./iam-evaluator.js";

const allowGet: PolicyStatement = {
  Effect: "Allow",
  Action: ["dynamodb:Get*"],
  Condition: { "ForAllValues:StringLike": { "dynamodb:LeadingKeys": ["SNAP#acme#*"] } },
};

describe("allows (the tests' IAM evaluator)", () => {
  it("matches actions with IAM wildcards and evaluates ForAllValues over a multivalued key", () => {
    expect(allows([allowGet], { action: "dynamodb:GetItem", context: { "dynamodb:LeadingKeys": ["SNAP#acme#transaction:t1"] } })).toBe(true);
    expect(allows([allowGet], { action: "dynamodb:PutItem", context: { "dynamodb:LeadingKeys": ["SNAP#acme#transaction:t1"] } })).toBe(false);
    expect(allows([allowGet], { action: "dynamodb:GetItem", context: { "dynamodb:LeadingKeys": ["SNAP#acme#a", "SNAP#globex#b"] } })).toBe(false);
  });

  it("fails an absent key under a single-valued operator unless IfExists", () => {
    const statement = (operator: string): PolicyStatement => ({ Effect: "Allow", Action: "kms:Decrypt", Condition: { [operator]: { "aws:SourceAccount": "111" } } });
    expect(allows([statement("StringEquals")], { action: "kms:Decrypt" })).toBe(false);
    expect(allows([statement("StringEqualsIfExists")], { action: "kms:Decrypt" })).toBe(true);
    expect(allows([statement("StringEquals")], { action: "kms:Decrypt", context: { "aws:SourceAccount": "222" } })).toBe(false);
  });

  it("refuses to judge a policy holding a Deny, even one after the statement that allows", () => {
    const deny: PolicyStatement = { Effect: "Deny", Action: "dynamodb:GetItem" };
    const request = { action: "dynamodb:GetItem", context: { "dynamodb:LeadingKeys": ["SNAP#acme#x"] } };
    expect(() => allows([allowGet, deny], request)).toThrow(/Effect Deny is not evaluated/);
    expect(() => allows([deny, allowGet], request)).toThrow(/Effect Deny is not evaluated/);
  });

  it("refuses an operator it does not evaluate, and a multivalued key under a single-valued operator", () => {
    const numeric: PolicyStatement = { Effect: "Allow", Action: "*", Condition: { NumericLessThan: { "aws:MultiFactorAuthAge": "3600" } } };
    expect(() => allows([numeric], { action: "s3:GetObject", context: { "aws:MultiFactorAuthAge": "10" } })).toThrow(/NumericLessThan is not evaluated/);
    const single: PolicyStatement = { Effect: "Allow", Action: "dynamodb:GetItem", Condition: { StringLike: { "dynamodb:LeadingKeys": "SNAP#*" } } };
    expect(() => allows([single], { action: "dynamodb:GetItem", context: { "dynamodb:LeadingKeys": ["SNAP#a"] } })).toThrow(/multivalued/);
  });
});
