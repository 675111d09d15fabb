import { describe, expect, it } from "vitest";
import {
  CYCLE_SAFETY_MARGIN_MS,
  INVOCATION_EARLY_END_MS,
  MAX_CYCLE_BUDGET_MS,
  MIN_CONFORM_TIMEOUT_MS,
  MIN_CYCLE_BUDGET_MS,
  MIN_POLLER_TIMEOUT_MS,
  REFRESH_TIMEOUT_MARGIN_MS,
  SDK_CALL_MAX_MS,
  SDK_TIMEOUTS,
  TOKEN_LEASE_TTL_MS,
  checkPollerTimeout,
  cycleDeadline,
  loadConfig,
  logLevelOf,
  validTenantOf,
} from "../../shared/aws/config.js";
import { DEFAULT_DEADLINE_GRACE_MS } from "../../shared/bridge/deps.js";
import { FunctionTimeoutTooShortError, LambdaConfigurationError } from "../../shared/aws/errors.js";
import { SAVE_END_MARGIN_MS } from "../../shared/aws/token-store.js";
import { thrown } from "../thrown.js";
import { VALID_FUNCTION_ENV } from "./support/function-env.js";

const valid = VALID_FUNCTION_ENV;

/** The error loadConfig throws for `env`, or undefined when it throws none. */
function configErrorOf(env: Record<string, string | undefined>): LambdaConfigurationError | undefined {
  try {
    loadConfig(env);
  } catch (e) {
    return e as LambdaConfigurationError;
  }
  return undefined;
}

describe("validTenantOf", () => {
  it("gives TENANT_ID as loadConfig takes it while another variable is bad, and nothing for an invalid or missing one", () => {
    expect(validTenantOf({ ...valid, TENANT_ID: " acme ", PII_MODE: "sometimes" })).toBe("acme");
    expect(validTenantOf({ ...valid, TENANT_ID: "acme#1" })).toBeUndefined();
    expect(validTenantOf({ ...valid, TENANT_ID: "  " })).toBeUndefined();
    expect(validTenantOf({ PII_MODE: "hash" })).toBeUndefined();
  });
});

describe("loadConfig", () => {
  it("reads a valid environment, applying the documented defaults", () => {
    expect(loadConfig(valid)).toEqual({
      tenant: "acme",
      baseUrl: "https://api.example.com",
      tableName: "bridge",
      secretId: valid.SECRET_ID,
      eventBusName: "bridge-bus",
      eventSource: "qashio.bridge",
      piiMode: "hash",
      emitCardCreated: false,
      cardDetails: false,
      serviceName: "qashio-bridge",
      metricsNamespace: "QashioBridge",
    });
  });

  it("reads the optional settings", () => {
    const config = loadConfig({ ...valid, EMIT_CARD_CREATED: "true", CARD_DETAILS: "true", CYCLE_BUDGET_MS: "45000", EVENT_SOURCE: "acme.cards" });
    expect(config).toMatchObject({ emitCardCreated: true, cardDetails: true, cycleBudgetMs: 45_000, eventSource: "acme.cards" });
  });

  it("reads EMIT_CARD_CREATED and CARD_DETAILS each from its own variable", () => {
    expect(loadConfig({ ...valid, EMIT_CARD_CREATED: "true" })).toMatchObject({ emitCardCreated: true, cardDetails: false });
    expect(loadConfig({ ...valid, CARD_DETAILS: "true" })).toMatchObject({ emitCardCreated: false, cardDetails: true });
  });

  it("defaults POWERTOOLS_SERVICE_NAME to qashio-bridge, the metrics' service dimension", () => {
    const { POWERTOOLS_SERVICE_NAME: _s, ...rest } = valid;
    expect(loadConfig(rest).serviceName).toBe("qashio-bridge");
  });

  it("keeps only AWS/ from the metrics namespace, not every namespace starting with AWS", () => {
    expect(loadConfig({ ...valid, POWERTOOLS_METRICS_NAMESPACE: "AWSBridge" }).metricsNamespace).toBe("AWSBridge");
  });

  it("refuses a table ARN whose account is not 12 digits", () => {
    for (const arn of ["arn:aws:dynamodb:eu-west-1:12345678901:table/bridge", "arn:aws:dynamodb:eu-west-1:1234567890123:table/bridge"]) {
      expect(() => loadConfig({ ...valid, TABLE_NAME: arn })).toThrow(/^Invalid function environment: TABLE_NAME must be a DynamoDB table name/);
    }
  });

  it("names the log level variable Powertools reads: LOG_LEVEL only when POWERTOOLS_LOG_LEVEL is unset", () => {
    const levels = "must be one of trace, debug, info, warn, error, critical or silent (any case";
    expect(() => loadConfig({ ...valid, LOG_LEVEL: "verbose" })).toThrow(`Invalid function environment: LOG_LEVEL ${levels}; read as POWERTOOLS_LOG_LEVEL is unset)`);
    expect(() => loadConfig({ ...valid, POWERTOOLS_LOG_LEVEL: "verbose", LOG_LEVEL: "debug" })).toThrow(`Invalid function environment: POWERTOOLS_LOG_LEVEL ${levels})`);
    // Set, POWERTOOLS_LOG_LEVEL wins: the logger never reads LOG_LEVEL then (another tool's variable, perhaps).
    expect(loadConfig({ ...valid, POWERTOOLS_LOG_LEVEL: "info", LOG_LEVEL: "verbose" }).tenant).toBe("acme");
    expect(loadConfig({ ...valid, LOG_LEVEL: " Debug " }).tenant).toBe("acme");
  });

  it.each(["", "  "])("takes a blank POWERTOOLS_LOG_LEVEL (%j) as unset, as Powertools does: LOG_LEVEL is read, and named when it is no level", (blank) => {
    expect(loadConfig({ ...valid, POWERTOOLS_LOG_LEVEL: blank }).tenant).toBe("acme");
    expect(loadConfig({ ...valid, POWERTOOLS_LOG_LEVEL: blank, LOG_LEVEL: "debug" }).tenant).toBe("acme");
    expect(logLevelOf({ POWERTOOLS_LOG_LEVEL: blank, LOG_LEVEL: "debug" })).toBe("DEBUG");
    expect(() => loadConfig({ ...valid, POWERTOOLS_LOG_LEVEL: blank, LOG_LEVEL: "verbose" })).toThrow(
      /^Invalid function environment: LOG_LEVEL must be one of trace, debug, info, warn, error, critical or silent \(any case; read as POWERTOOLS_LOG_LEVEL is blank\)$/,
    );
  });

  it("takes a blank LOG_LEVEL as unset, as Powertools does (INFO)", () => {
    expect(loadConfig({ ...valid, LOG_LEVEL: " " }).tenant).toBe("acme");
    expect(loadConfig({ ...valid, POWERTOOLS_LOG_LEVEL: "", LOG_LEVEL: "" }).tenant).toBe("acme");
    expect(logLevelOf({ LOG_LEVEL: " " })).toBeUndefined();
  });

  it("resolves a named deployment through its URL variable", () => {
    expect(loadConfig({ ...valid, QASHIO_BASE_URL: "sandbox", QASHIO_SANDBOX_URL: "https://sandbox.local" }).baseUrl).toBe("https://sandbox.local");
  });

  it("requires https for the provider, literal or named, unless it is a loopback host", () => {
    const problem = "must use https (http is accepted only for a loopback host: localhost, 127.0.0.0/8 or ::1)";
    expect(() => loadConfig({ ...valid, QASHIO_BASE_URL: "http://api.example.com" })).toThrow(
      `Invalid function environment: QASHIO_BASE_URL base URL (host api.example.com) ${problem}`,
    );
    expect(() => loadConfig({ ...valid, QASHIO_BASE_URL: "production", QASHIO_PRODUCTION_URL: "http://api.example.com" })).toThrow(
      `Invalid function environment: QASHIO_BASE_URL QASHIO_PRODUCTION_URL (host api.example.com) ${problem}`,
    );
    expect(loadConfig({ ...valid, QASHIO_BASE_URL: "sandbox", QASHIO_SANDBOX_URL: "http://127.0.0.1:4010" }).baseUrl).toBe("http://127.0.0.1:4010");
  });

  it("names a bad QASHIO_BASE_URL together with the other bad variables, not only once they are fixed", () => {
    const issuesOf = (env: Record<string, string | undefined>): string[] => {
      try {
        loadConfig(env);
      } catch (error) {
        expect(error).toBeInstanceOf(LambdaConfigurationError);
        return (error as LambdaConfigurationError).issues.map((i) => i.variable).sort();
      }
      throw new Error("no error");
    };
    expect(issuesOf({ ...valid, TABLE_NAME: undefined, QASHIO_BASE_URL: "http://api.example.com" })).toEqual(["QASHIO_BASE_URL", "TABLE_NAME"]);
    expect(issuesOf({ ...valid, PII_MODE: "sometimes", QASHIO_BASE_URL: "production" })).toEqual(["PII_MODE", "QASHIO_BASE_URL"]);
  });

  it("names every missing or invalid variable in one error", () => {
    const { TABLE_NAME: _t, SECRET_ID: _s, ...rest } = valid;
    const error = (() => {
      try {
        loadConfig({ ...rest, PII_MODE: "partial", EMIT_CARD_CREATED: "yes", CARD_DETAILS: "on", CYCLE_BUDGET_MS: "-1", TENANT_ID: "a#b" });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(LambdaConfigurationError);
    const variables = (error as LambdaConfigurationError).issues.map((i) => i.variable).sort();
    expect(variables).toEqual(["CARD_DETAILS", "CYCLE_BUDGET_MS", "EMIT_CARD_CREATED", "PII_MODE", "SECRET_ID", "TABLE_NAME", "TENANT_ID"]);
    expect((error as Error).message).toMatch(/TABLE_NAME is required/);
  });

  it.each(["0", "1.5", "soon"])("refuses CYCLE_BUDGET_MS=%s: the budget is a positive whole number of ms", (budget) => {
    const error = configErrorOf({ ...valid, CYCLE_BUDGET_MS: budget });
    expect(error).toBeInstanceOf(LambdaConfigurationError);
    expect(error?.issues.map((i) => i.variable)).toEqual(["CYCLE_BUDGET_MS"]);
  });

  it("refuses a CYCLE_BUDGET_MS under the token refresh lease, naming the minimum and why: under it less the calls' grace no token refresh ever starts", () => {
    expect(MIN_CYCLE_BUDGET_MS).toBe(TOKEN_LEASE_TTL_MS);
    for (const budget of [1, TOKEN_LEASE_TTL_MS - DEFAULT_DEADLINE_GRACE_MS - 1, MIN_CYCLE_BUDGET_MS - 1]) {
      const error = configErrorOf({ ...valid, CYCLE_BUDGET_MS: String(budget) });
      expect(error).toBeInstanceOf(LambdaConfigurationError);
      expect(error?.issues.map((i) => i.variable)).toEqual(["CYCLE_BUDGET_MS"]);
      expect(error?.message).toMatch(/^Invalid function environment: CYCLE_BUDGET_MS must be at least 30000 \(ms\): a token refresh starts only when its 30 s lease/);
      expect(error?.message).toContain("under 15000 no expired access token is ever refreshed");
    }
    expect(loadConfig({ ...valid, CYCLE_BUDGET_MS: String(MIN_CYCLE_BUDGET_MS) }).cycleBudgetMs).toBe(MIN_CYCLE_BUDGET_MS);
  });

  it("refuses a CYCLE_BUDGET_MS over a Lambda's longest run (15 minutes), however many digits, naming the maximum and why", () => {
    expect(MAX_CYCLE_BUDGET_MS).toBe(900_000);
    // The last one reads as Infinity: refused as too long all the same, not as "not a number".
    for (const budget of [String(MAX_CYCLE_BUDGET_MS + 1), "9000000", "9".repeat(400)]) {
      const error = configErrorOf({ ...valid, CYCLE_BUDGET_MS: budget });
      expect(error).toBeInstanceOf(LambdaConfigurationError);
      expect(error?.issues.map((i) => i.variable)).toEqual(["CYCLE_BUDGET_MS"]);
      expect(error?.message).toMatch(/^Invalid function environment: CYCLE_BUDGET_MS must be at most 900000 \(ms\): no Lambda runs longer than 15 minutes/);
    }
    expect(loadConfig({ ...valid, CYCLE_BUDGET_MS: String(MAX_CYCLE_BUDGET_MS) }).cycleBudgetMs).toBe(MAX_CYCLE_BUDGET_MS);
  });

  it.each(["", "  "])("refuses an empty CYCLE_BUDGET_MS (%j) as empty, not as a budget of 0", (budget) => {
    expect(() => loadConfig({ ...valid, CYCLE_BUDGET_MS: budget })).toThrow(/^Invalid function environment: CYCLE_BUDGET_MS must not be empty$/);
  });

  it.each(["1.5", "soon", "0x1d4c0", "1e5", "+45000", "-45000", "45000.0", "45_000", "45 000"])(
    "refuses CYCLE_BUDGET_MS=%s: only decimal digits make a whole number of milliseconds",
    (budget) => {
      expect(() => loadConfig({ ...valid, CYCLE_BUDGET_MS: budget })).toThrow(
        /^Invalid function environment: CYCLE_BUDGET_MS must be a whole number of milliseconds in decimal digits, e\.g\. 45000$/,
      );
    },
  );

  it("reads CYCLE_BUDGET_MS in decimal digits, trimmed as every variable", () => {
    expect(loadConfig({ ...valid, CYCLE_BUDGET_MS: " 045000 " }).cycleBudgetMs).toBe(45_000);
  });

  it("requires PII_MODE: the personal fields' treatment is never left to a default", () => {
    const { PII_MODE: _p, ...rest } = valid;
    // An enum once answered `PII_MODE Invalid option: expected one of ...`, as if a value were set.
    expect(() => loadConfig(rest)).toThrow(/^Invalid function environment: PII_MODE is required$/);
    expect(() => loadConfig({ ...rest, TENANT_ID: undefined })).toThrow(/^Invalid function environment: TENANT_ID is required; PII_MODE is required$/);
  });

  it("refuses a variable holding only blanks as empty", () => {
    expect(() => loadConfig({ ...valid, TABLE_NAME: "  " })).toThrow(/^Invalid function environment: TABLE_NAME must not be empty$/);
  });

  it.each(["TENANT_ID", "QASHIO_BASE_URL", "TABLE_NAME", "SECRET_ID", "EVENT_BUS_NAME", "EVENT_SOURCE", "POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE"])(
    "refuses a blank %s as empty, naming it, before any cycle fails on it",
    (variable) => {
      expect(() => loadConfig({ ...valid, [variable]: " " })).toThrow(new RegExp(`^Invalid function environment: ${variable} must not be empty$`));
    },
  );

  it.each(["PII_MODE", "EMIT_CARD_CREATED", "CARD_DETAILS"])("refuses a blank %s as empty, not as an unknown option", (variable) => {
    for (const blank of ["", "  "]) {
      expect(() => loadConfig({ ...valid, [variable]: blank })).toThrow(new RegExp(`^Invalid function environment: ${variable} must not be empty$`));
    }
  });

  it("reads PII_MODE, EMIT_CARD_CREATED and CARD_DETAILS trimmed as every variable, and names their values when one is none of them", () => {
    expect(loadConfig({ ...valid, PII_MODE: " full ", EMIT_CARD_CREATED: "true ", CARD_DETAILS: " true" })).toMatchObject({
      piiMode: "full",
      emitCardCreated: true,
      cardDetails: true,
    });
    expect(() => loadConfig({ ...valid, PII_MODE: "Hash", EMIT_CARD_CREATED: "yes", CARD_DETAILS: "TRUE" })).toThrow(
      /^Invalid function environment: PII_MODE must be full, redact or hash; EMIT_CARD_CREATED must be true or false; CARD_DETAILS must be true or false$/,
    );
  });

  it("refuses an EVENT_SOURCE the tenants file would refuse, naming why, before every publish fails on it", () => {
    // EventBridge keeps aws.* for AWS services: every PutEvents entry under it is refused.
    expect(() => loadConfig({ ...valid, EVENT_SOURCE: "aws.qashio" })).toThrow(/^Invalid function environment: EVENT_SOURCE must not start with aws\.$/);
    for (const source of ["acme bridge", "-acme", `a${"b".repeat(256)}`]) {
      expect(() => loadConfig({ ...valid, EVENT_SOURCE: source })).toThrow(/^Invalid function environment: EVENT_SOURCE must be an EventBridge source such as qashio\.bridge$/);
    }
    expect(loadConfig({ ...valid, EVENT_SOURCE: ` a${"b".repeat(255)} ` }).eventSource).toBe(`a${"b".repeat(255)}`);
  });

  it("takes an EVENT_SOURCE with capitals, which EventBridge and the schema registry's names take (consumers may already match one)", () => {
    for (const source of ["Acme.Finance", "MyCompany.Qashio_Bridge-2", "ACME"]) expect(loadConfig({ ...valid, EVENT_SOURCE: source }).eventSource).toBe(source);
  });

  it("refuses a POWERTOOLS_METRICS_NAMESPACE CloudWatch takes no metric under, naming why, instead of every metric being dropped unsaid", () => {
    expect(() => loadConfig({ ...valid, POWERTOOLS_METRICS_NAMESPACE: "AWS/Lambda" })).toThrow(
      /^Invalid function environment: POWERTOOLS_METRICS_NAMESPACE must not start with AWS\/ \(kept for AWS services\)$/,
    );
    for (const namespace of ["Qashio!Bridge", "Qashiö", "x".repeat(256)]) {
      expect(() => loadConfig({ ...valid, POWERTOOLS_METRICS_NAMESPACE: namespace })).toThrow(
        /^Invalid function environment: POWERTOOLS_METRICS_NAMESPACE must be at most 255 ASCII letters, digits, spaces or \. - _ \/ # : \(CloudWatch extracts no metric under another namespace\)$/,
      );
    }
    expect(loadConfig({ ...valid, POWERTOOLS_METRICS_NAMESPACE: ` Qashio Bridge/prod-1:a#b_${"x".repeat(230)} ` }).metricsNamespace).toBe(`Qashio Bridge/prod-1:a#b_${"x".repeat(230)}`);
  });

  it("refuses a POWERTOOLS_SERVICE_NAME CloudWatch takes as no dimension value (the metrics' service dimension), naming it", () => {
    // DEL (0x7F) is a control character too, just past the printable range.
    for (const service of ["x".repeat(1025), "qashiö-bridge", "qashio\tbridge", "qashio\x7Fbridge"]) {
      expect(() => loadConfig({ ...valid, POWERTOOLS_SERVICE_NAME: service })).toThrow(
        /^Invalid function environment: POWERTOOLS_SERVICE_NAME must be at most 1024 printable ASCII characters \(CloudWatch's rule for a dimension value: it is the metrics' service dimension\)$/,
      );
    }
    expect(loadConfig({ ...valid, POWERTOOLS_SERVICE_NAME: ` a b~${"x".repeat(1020)} ` }).serviceName).toBe(`a b~${"x".repeat(1020)}`);
  });

  it("refuses a TENANT_ID the stack could never have written (the tenants file's slug rule), naming it", () => {
    for (const tenant of ["Acme", "acme_1", "acme.eu", "a:b", "-acme", "acme-", "x".repeat(33)]) {
      expect(() => loadConfig({ ...valid, TENANT_ID: tenant })).toThrow(
        /^Invalid function environment: TENANT_ID must be a lowercase slug \(a-z, 0-9, '-'\) of at most 32 characters$/,
      );
    }
    for (const tenant of ["a", "acme-sandbox", "x".repeat(32)]) {
      expect(loadConfig({ ...valid, TENANT_ID: ` ${tenant} ` }).tenant).toBe(tenant);
    }
  });

  it("refuses a TABLE_NAME that is neither a DynamoDB table name nor a table ARN, naming it, before every call fails on it", () => {
    for (const table of ["bridge table", "ab", "x".repeat(256), "arn:aws:dynamodb:eu-west-1:123456789012:bridge", "bridge/t"]) {
      expect(() => loadConfig({ ...valid, TABLE_NAME: table })).toThrow(
        /^Invalid function environment: TABLE_NAME must be a DynamoDB table name \(3 to 255 letters, digits, _ \. or -\) or a table's ARN$/,
      );
    }
    for (const table of ["abc", "Acme_bridge-Table.1", "x".repeat(255), "arn:aws:dynamodb:eu-west-1:123456789012:table/bridge", "arn:aws-cn:dynamodb:cn-north-1:123456789012:table/t.b-c_d"]) {
      expect(loadConfig({ ...valid, TABLE_NAME: ` ${table} ` }).tableName).toBe(table);
    }
  });

  it("refuses an EVENT_BUS_NAME the tenants file would refuse (neither a bus name nor a bus ARN), naming it, before every publish fails on it", () => {
    for (const bus of ["bridge bus", "x".repeat(257), "arn:aws:events:eu-west-1:123456789012:rule/bridge", "arn:aws:events:eu-west-1:1234:event-bus/b", "arn:aws:events:eu-west-1:12345678901:event-bus/b", "arn:aws:events:eu-west-1:123456789012:event-bus/", "finance/bus"]) {
      expect(() => loadConfig({ ...valid, EVENT_BUS_NAME: bus })).toThrow(/^Invalid function environment: EVENT_BUS_NAME must be an event bus name or ARN$/);
    }
    for (const bus of ["b", "x".repeat(256), "acme.finance-bus_1", "arn:aws:events:eu-west-1:123456789012:event-bus/finance", "arn:aws-cn:events:cn-north-1:123456789012:event-bus/finance"]) {
      expect(loadConfig({ ...valid, EVENT_BUS_NAME: ` ${bus} ` }).eventBusName).toBe(bus);
    }
  });

  it("refuses a SECRET_ID that is neither a secret name nor a secret ARN, naming it, before every token read fails on it", () => {
    for (const secret of ["acme token", "x".repeat(513), "arn:aws:secretsmanager:eu-west-1:123456789012:acme", "arn:aws:kms:eu-west-1:123456789012:secret:acme", "arn:aws:secretsmanager:eu-west-1:1234:secret:acme", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme token", "see arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme"]) {
      expect(() => loadConfig({ ...valid, SECRET_ID: secret })).toThrow(/^Invalid function environment: SECRET_ID must be a Secrets Manager secret name or ARN$/);
    }
    for (const secret of ["s", "x".repeat(512), "qashio/acme_token+1=a.b@c-d", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme-AbCdEf"]) {
      expect(loadConfig({ ...valid, SECRET_ID: ` ${secret} ` }).secretId).toBe(secret);
    }
  });

  it("rejects a base URL that is neither a URL nor a deployment", () => {
    expect(() => loadConfig({ ...valid, QASHIO_BASE_URL: "ftp://x" })).toThrow(/QASHIO_BASE_URL/);
  });

  it.each([
    ["https://svc:pa/ss@api.example", ["pa/ss", "svc", "api.example"]],
    ["https://svc:p@ss@api.example", ["p@ss", "ss@", "svc", "api.example"]],
  ])("never echoes the URL %s, literal or named, in its error", (url, leaks) => {
    for (const env of [
      { ...valid, QASHIO_BASE_URL: url },
      { ...valid, QASHIO_BASE_URL: "production", QASHIO_PRODUCTION_URL: url },
    ]) {
      const error = (() => {
        try {
          loadConfig(env);
        } catch (e) {
          return e as LambdaConfigurationError;
        }
      })();
      expect(error).toBeInstanceOf(LambdaConfigurationError);
      expect(error?.message).toMatch(/^Invalid function environment: QASHIO_BASE_URL /);
      for (const text of [error?.message ?? "", JSON.stringify(error?.issues)]) {
        for (const leak of leaks) expect(text).not.toContain(leak);
      }
    }
  });
});

describe("cycleDeadline", () => {
  it("keeps back more than the engine's calls may run past the deadline, so a cycle ends before the Lambda timeout", () => {
    expect(CYCLE_SAFETY_MARGIN_MS).toBeGreaterThanOrEqual(DEFAULT_DEADLINE_GRACE_MS + 10_000);
  });

  it("keeps a safety margin before the Lambda timeout", () => {
    expect(cycleDeadline(1_000, 60_000)).toBe(1_000 + 60_000 - CYCLE_SAFETY_MARGIN_MS);
  });
  it("is capped by the configured budget", () => {
    expect(cycleDeadline(1_000, 900_000, 30_000)).toBe(31_000);
  });
  it("keeps a budget longer than the Lambda's remaining time within that time, less the margin", () => {
    expect(cycleDeadline(1_000, 60_000, 900_000)).toBe(1_000 + 60_000 - CYCLE_SAFETY_MARGIN_MS);
  });
  it("never lies in the past", () => {
    expect(cycleDeadline(1_000, 5_000)).toBe(1_000);
  });
});

describe("REFRESH_TIMEOUT_MARGIN_MS", () => {
  it("is the room a poller's refresh leaves: its lease ends by its call's deadline, the cycle's deadline plus the grace", () => {
    // The remaining time bounding the cycle (not a smaller CYCLE_BUDGET_MS): the latest a poller's refresh lease ends.
    for (const timeoutMs of [MIN_POLLER_TIMEOUT_MS, 300_000]) {
      expect(timeoutMs - (cycleDeadline(0, timeoutMs) + DEFAULT_DEADLINE_GRACE_MS)).toBe(REFRESH_TIMEOUT_MARGIN_MS);
    }
  });
});

describe("SDK_CALL_MAX_MS", () => {
  it("outlasts every attempt of a call to a silent endpoint timing out, leaving the SDK's backoff between them a second", () => {
    expect(SDK_CALL_MAX_MS - SDK_TIMEOUTS.maxAttempts * SDK_TIMEOUTS.requestTimeoutMs).toBe(1_000);
  });
});

describe("INVOCATION_EARLY_END_MS", () => {
  it("ends an invocation middy gives up on after the token store has stored a rotated token, which it does SAVE_END_MARGIN_MS before the timeout", () => {
    expect(INVOCATION_EARLY_END_MS).toBeLessThan(SAVE_END_MARGIN_MS);
  });
});

describe("checkPollerTimeout", () => {
  it("asks for a timeout that leaves the minimum budget once the safety margin is kept back", () => {
    expect(MIN_POLLER_TIMEOUT_MS).toBe(MIN_CYCLE_BUDGET_MS + CYCLE_SAFETY_MARGIN_MS);
    expect(cycleDeadline(0, MIN_POLLER_TIMEOUT_MS)).toBe(MIN_CYCLE_BUDGET_MS);
  });

  it("takes the timeout in the whole seconds Lambda sets, the remaining time at entry rounded up", () => {
    expect(() => checkPollerTimeout(MIN_POLLER_TIMEOUT_MS - 1, 0)).not.toThrow();
    expect(() => checkPollerTimeout(MIN_POLLER_TIMEOUT_MS - 1_000, 0)).toThrow(FunctionTimeoutTooShortError);
    // Up, not to the nearest second: 999 ms gone before the handler started still reads as the 60 s timeout.
    expect(() => checkPollerTimeout(MIN_POLLER_TIMEOUT_MS - 999, 0)).not.toThrow();
  });

  it("holds a conform-pii pass to its own minimum, past the safety margin, and a re-drive to the poller's", () => {
    expect(cycleDeadline(0, MIN_CONFORM_TIMEOUT_MS)).toBeGreaterThan(0);
    expect(() => checkPollerTimeout(MIN_CONFORM_TIMEOUT_MS - 999, 0, undefined, "conform-pii")).not.toThrow();
    expect(() => checkPollerTimeout(MIN_CONFORM_TIMEOUT_MS - 1_000, 0, undefined, "conform-pii")).toThrow(FunctionTimeoutTooShortError);
    expect(() => checkPollerTimeout(MIN_CONFORM_TIMEOUT_MS, 0, undefined, "redrive")).toThrow(FunctionTimeoutTooShortError);
    const refused = thrown(() => checkPollerTimeout(CYCLE_SAFETY_MARGIN_MS, 0, MIN_CYCLE_BUDGET_MS, "conform-pii"), FunctionTimeoutTooShortError);
    expect(refused).toMatchObject({ action: "conform-pii", timeoutMs: CYCLE_SAFETY_MARGIN_MS, minimumMs: MIN_CONFORM_TIMEOUT_MS, stackTimeoutMs: MIN_POLLER_TIMEOUT_MS });
    expect(refused.message).toMatch(/^The function's timeout is too short: 30 s or less, where a conform-pii pass needs at least 35 s, the 30 s kept back/);
    expect(refused.message).toContain("the stack sets 60 s (CYCLE_BUDGET_MS + 30 s)");
  });

  it("refuses a re-drive as a cycle (it reads the provider too): its error names the action cycle, one the error type has, and the poller's minimum", () => {
    const refused = thrown(() => checkPollerTimeout(MIN_CONFORM_TIMEOUT_MS, 0, undefined, "redrive"), FunctionTimeoutTooShortError);
    expect(refused).toMatchObject({ action: "cycle", minimumMs: MIN_POLLER_TIMEOUT_MS });
    expect(refused.message).toMatch(/^The function's timeout is too short: 35 s or less, where a poller needs at least 60 s/);
  });

  it("asks a conform-pii pass refused without a budget to set back the poller's minimum, not the pass's: at 35 s its cycles would be refused", () => {
    const refused = thrown(() => checkPollerTimeout(CYCLE_SAFETY_MARGIN_MS, 0, undefined, "conform-pii"), FunctionTimeoutTooShortError);
    expect(refused).toMatchObject({ action: "conform-pii", minimumMs: MIN_CONFORM_TIMEOUT_MS });
    expect(refused.message).toContain("Set the function's timeout back to at least 60 s (its cycles' minimum);");
    expect(() => checkPollerTimeout(MIN_CONFORM_TIMEOUT_MS, 0)).toThrow(FunctionTimeoutTooShortError);
  });

  it("counts the time an invocation may have lost before its handler started", () => {
    expect(() => checkPollerTimeout(40_000, 20_000)).not.toThrow();
    expect(() => checkPollerTimeout(40_000, 19_000)).toThrow(FunctionTimeoutTooShortError);
  });

  it("names the timeout, the minimum and the stack's value (CYCLE_BUDGET_MS + the margin), or the minimum alone without a budget", () => {
    const error = (budgetMs?: number) => {
      try {
        checkPollerTimeout(45_000, 0, budgetMs);
      } catch (e) {
        return e as FunctionTimeoutTooShortError;
      }
      throw new Error("not refused");
    };
    expect(error(90_000)).toMatchObject({ timeoutMs: 45_000, minimumMs: MIN_POLLER_TIMEOUT_MS, stackTimeoutMs: 120_000 });
    expect(error(90_000).message).toMatch(/^The function's timeout is too short: 45 s or less, where a poller needs at least 60 s/);
    expect(error(90_000).message).toContain("the stack sets 120 s (CYCLE_BUDGET_MS + 30 s)");
    expect(error().message).toContain("Set the function's timeout back to at least 60 s;");
  });

  it("names the timeout it took (rounded up, the time lost before entry counted), not the remaining time read", () => {
    const refused = (remainingAtEntryMs: number, lostMs: number) => {
      try {
        checkPollerTimeout(remainingAtEntryMs, lostMs);
      } catch (e) {
        return e as FunctionTimeoutTooShortError;
      }
      throw new Error("not refused");
    };
    expect(refused(44_001, 0).timeoutMs).toBe(45_000);
    expect(refused(44_001, 0).message).toMatch(/^The function's timeout is too short: 45 s or less,/);
    expect(refused(40_000, 5_000).timeoutMs).toBe(45_000);
  });
});
