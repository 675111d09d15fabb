/**
 * docs/upgrading.md's notes for a deployed tenant, held to the code they describe: what a platform engineer reads
 * before deploying a new version must say what the stack now grants and names.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as kms from "aws-cdk-lib/aws-kms";
import { TABLE_ACCESS, type TableItemAction } from "../../infra/constructs/tenant-table.js";
import { TenantConfigError } from "../../infra/errors.js";
import { parseTenantConfig } from "../../infra/tenant-config.js";
import { TenantSecret, TOKEN_ROTATION_SCHEDULE, TOKEN_ROTATION_WINDOW } from "../../infra/constructs/tenant-secret.js";
import { MAX_CYCLE_BUDGET_MS, MIN_CONFORM_TIMEOUT_MS, MIN_CYCLE_BUDGET_MS, MIN_POLLER_TIMEOUT_MS } from "../../shared/aws/config.js";
import { LIVE_BY_TTL_INDEX, SECRET_TAGS, type PartitionKind, type TableUser } from "../../shared/aws/keys.js";
import { DEFAULT_QUARANTINE_RETENTION_DAYS } from "../../shared/aws/quarantine.js";
import { SECRET_VERSIONS_EARLY_REFRESH_LIMIT, SECRET_VERSIONS_PER_DAY_LIMIT } from "../../shared/aws/token-store.js";
import { PII_SALT_MIN_LENGTH } from "../../shared/bridge/pii.js";
import { MAX_RECORD_DEPTH } from "../../shared/bridge/validate.js";
import { SCHEMA_VERSION } from "../../shared/bridge/events/schemas.js";
import { CYCLE_LEASE_MS } from "../../shared/cli/cycle-lease.js";
import { MAX_REFERENCE_LENGTH } from "../../shared/qashio/schemas/primitives.js";
import { thrown } from "../thrown.js";
import { REPO_ROOT, testApp } from "./helpers.js";
import { docBullet, numbersSaid } from "../doc-text.js";

const upgrading = readFileSync(join(REPO_ROOT, "docs", "upgrading.md"), "utf8");

/** The bullet of docs/upgrading.md that starts with `start`. */
const upgradingBullet = (start: string): string => docBullet("docs/upgrading.md", start);

/** The item actions a verb of the notes names. */
const VERB_ACTIONS: Readonly<Record<string, readonly TableItemAction[]>> = {
  read: ["dynamodb:GetItem"],
  put: ["dynamodb:PutItem"],
  update: ["dynamodb:UpdateItem"],
  delete: ["dynamodb:DeleteItem"],
  "batch-read": ["dynamodb:BatchGetItem"],
  "batch-write": ["dynamodb:BatchWriteItem"],
};

/** The kinds of partition a noun of the notes names. */
const NOUN_KINDS: Readonly<Record<string, readonly PartitionKind[]>> = {
  "quarantine record": ["quarantine"],
  "cycle lease": ["transactionsCycleLease", "cardsCycleLease"],
  "token lease": ["tokenLease"],
  lease: ["transactionsCycleLease", "cardsCycleLease", "tokenLease"],
  token: ["token"],
  salt: ["piiSalt"],
  snapshot: ["snapshots", "cardSnapshots"],
};

const SUBJECT_USERS: Readonly<Record<string, readonly TableUser[]>> = {
  "the card poller": ["pollCards"],
  "each poller": ["pollTransactions", "pollCards"],
  "the rotation": ["rotateToken"],
};

interface RevokedGrant {
  readonly words: string[];
  readonly users: readonly TableUser[];
  readonly actions: TableItemAction[];
  readonly kinds: PartitionKind[];
}

/**
 * Each "<subject> can no longer <verbs> <nouns>, <verbs> <nouns>, nor <verbs> <nouns>" of `text`, up to a `;` or `.`:
 * the actions (verbs) the subject's roles may no longer send on those partitions (nouns). A verb after a noun starts
 * the next clause.
 */
function revokedGrants(text: string): RevokedGrant[] {
  const subjects = Object.keys(SUBJECT_USERS).join("|");
  // Longest first, so "token lease" is not read as "token"; plurals as their singular.
  const words = [...Object.keys(VERB_ACTIONS), ...Object.keys(NOUN_KINDS)].sort((a, b) => b.length - a.length).join("|");
  return [...text.matchAll(new RegExp(String.raw`(${subjects}) can no longer ([^;.]*)`, "g"))].flatMap(([, subject = "", rest = ""]) => {
    const claims: RevokedGrant[] = [];
    for (const [, word = ""] of rest.replace(/\([^)]*\)/g, "").matchAll(new RegExp(String.raw`\b(${words})s?\b`, "g"))) {
      const actions = VERB_ACTIONS[word];
      let current = claims.at(-1);
      if (actions !== undefined && (current === undefined || current.kinds.length > 0)) {
        current = { words: [subject, "can no longer"], users: SUBJECT_USERS[subject] ?? [], actions: [], kinds: [] };
        claims.push(current);
      }
      current?.words.push(word);
      current?.actions.push(...(actions ?? []));
      current?.kinds.push(...(NOUN_KINDS[word] ?? []));
    }
    return claims;
  });
}

describe("docs/upgrading.md, the per-partition table grants", () => {
  const grants = upgradingBullet("The functions' table grants are now per kind of partition");

  it("names, for each role, only actions its policy no longer grants on the partitions named", () => {
    const claims = revokedGrants(grants);
    for (const claim of claims) {
      expect(claim.actions.length, claim.words.join(" ")).toBeGreaterThan(0);
      expect(claim.kinds.length, claim.words.join(" ")).toBeGreaterThan(0);
      const stillGranted = claim.users.flatMap((user) =>
        claim.kinds.flatMap((kind) => (TABLE_ACCESS[user][kind] ?? []).filter((action) => claim.actions.includes(action)).map((action) => `${user} ${kind} ${action}`)),
      );
      expect(stillGranted, claim.words.join(" ")).toEqual([]);
    }
    // The bullet names the card poller, each poller and the rotation: a rewording this reader misses fails here.
    expect(new Set(claims.flatMap((claim) => claim.users))).toEqual(new Set(["pollCards", "pollTransactions", "rotateToken"]));
  });
});

/** The numbers `pattern`'s groups capture in the notes (its first match, whitespace as one space). */
const numbersIn = (pattern: RegExp): number[] => numbersSaid(upgrading.replace(/\s+/g, " "), pattern)[0] ?? [];

describe("docs/upgrading.md, the limits and names a deployed tenant meets", () => {
  it("gives the PII salt's minimum, and the length of the salt the stack generates", () => {
    const stack = new Stack(testApp(), "Salt");
    new TenantSecret(stack, "Secret", { tenantId: "acme", leaseTableName: "table", encryptionKey: new kms.Key(stack, "Key") });
    const [secret] = Object.values(Template.fromStack(stack).findResources("AWS::SecretsManager::Secret")) as { Properties: { GenerateSecretString: { PasswordLength: number } } }[];
    expect(numbersIn(/refuses a salt shorter than (\d+) characters[^(]*\(a generated one has (\d+)\)/)).toEqual([PII_SALT_MIN_LENGTH, secret?.Properties.GenerateSecretString.PasswordLength]);
  });

  it("names the secret's tags and the table's new index as the code does", () => {
    expect(upgradingBullet("The tenant's secret gets two tags")).toContain(`\`${SECRET_TAGS.tenant}\` and \`${SECRET_TAGS.leaseTable}\``);
    expect(upgradingBullet("The table gains a global secondary index")).toContain(`\`${LIVE_BY_TTL_INDEX}\``);
  });

  it("gives the secret version limits and the rotation's daily window", () => {
    expect(numbersIn(/holds (\d+) versions created in the last day, and from (\d+) on/)).toEqual([SECRET_VERSIONS_PER_DAY_LIMIT, SECRET_VERSIONS_EARLY_REFRESH_LIMIT]);
    const [start, end] = numbersIn(/runs daily, (\d\d):00-(\d\d):00 UTC/);
    expect(TOKEN_ROTATION_SCHEDULE).toBe(`cron(0 ${start} * * ? *)`);
    expect(TOKEN_ROTATION_WINDOW).toBe(`${(end ?? 0) - (start ?? 0)}h`);
  });

  it("gives the cycle budget and timeout bounds a poller now fails under", () => {
    const [budget, timeoutSeconds, conformSeconds, maxBudget] = numbersIn(
      /`CYCLE_BUDGET_MS` was set by hand under (\d+), or whose Lambda timeout was lowered by hand under (\d+) s,[^.]*a `conform-pii` pass under (\d+) s[^]*?set by hand over (\d+)/,
    );
    expect([budget, (timeoutSeconds ?? 0) * 1000, (conformSeconds ?? 0) * 1000, maxBudget]).toEqual([MIN_CYCLE_BUDGET_MS, MIN_POLLER_TIMEOUT_MS, MIN_CONFORM_TIMEOUT_MS, MAX_CYCLE_BUDGET_MS]);
  });

  it("gives how long old quarantine records last, and the depth and reference length now quarantined", () => {
    const expiries = [...upgrading.replace(/\s+/g, " ").matchAll(/expire (\d+) days after/g)].map((m) => Number(m[1]));
    expect(expiries.length).toBeGreaterThan(0);
    expect(new Set(expiries)).toEqual(new Set([DEFAULT_QUARANTINE_RETENTION_DAYS]));
    expect(numbersIn(/Records nested (\d+) levels or more, references \(`qashio_id`, card ids\) over (\d+) characters/)).toEqual([MAX_RECORD_DEPTH, MAX_REFERENCE_LENGTH]);
  });

  it("names the events' schema version, and how long a local lock of an earlier version is waited for", () => {
    const versions = [...upgrading.matchAll(/Events (?:are now|are) schema `([\d.]+)`/g)].map((m) => m[1]);
    expect(versions.length).toBe(2);
    expect(new Set(versions)).toEqual(new Set([SCHEMA_VERSION]));
    expect(numbersIn(/waits for it to expire \((\d+) s after its last renewal\)/)).toEqual([CYCLE_LEASE_MS / 1000]);
  });
});

describe("docs/upgrading.md, webhook and token URLs checked harder", () => {
  const text = upgradingBullet("Webhook and token URLs are checked a little harder");
  /** The message of a tenant whose webhook URL (or OAuth token URL) is `url`. */
  const messageFor = (url: string, where: "url" | "tokenUrl"): string => {
    const secret = { secretArn: "arn:aws:secretsmanager:eu-west-1:111111111111:secret:acme/hooks-AbCdEf" };
    const auth = where === "url" ? { type: "apiKey", headerName: "x-api-key", value: secret } : { type: "oauthClientCredentials", tokenUrl: url, clientId: "bridge", clientSecret: secret };
    const hook = { name: "erp", url: where === "url" ? url : "https://erp.acme.example/hooks", eventTypes: ["transaction.created"], auth };
    const tenant = { id: "acme", environment: "sandbox", account: "111111111111", region: "eu-west-1", alarms: { email: "ops@acme.test" }, webhooks: [hook] };
    return thrown(() => parseTenantConfig(tenant), TenantConfigError).message;
  };

  it("refuses https:host without // with the one message it quotes, as it does a URL that does not parse", () => {
    const [, quoted = ""] = /\("([^"]+)"\)/.exec(text) ?? [];
    expect(quoted).not.toBe("");
    for (const where of ["url", "tokenUrl"] as const) {
      for (const url of ["https:erp.acme.example/hooks", "https://exa mple.test/hooks"]) {
        const field = where === "url" ? "webhooks[0].url" : "webhooks[0].auth.tokenUrl";
        expect(messageFor(url, where), `${where} ${url}`).toBe(`tenant "acme": field ${field}: ${quoted}`);
      }
    }
  });
});
