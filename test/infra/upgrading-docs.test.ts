/**
 * docs/upgrading.md's notes for a deployed tenant, held to the code they describe: what a platform engineer reads
 * before deploying a new version must say what the stack now grants and names.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TABLE_ACCESS, type TableItemAction } from "../../infra/constructs/tenant-table.js";
import type { PartitionKind, TableUser } from "../../shared/aws/keys.js";
import { REPO_ROOT } from "./helpers.js";

const upgrading = readFileSync(join(REPO_ROOT, "docs", "upgrading.md"), "utf8");

/** The bullet of docs/upgrading.md that starts with `start`, up to the next bullet or heading. */
function bullet(start: string): string {
  const found = upgrading.split(/\n(?=- |#)/).find((item) => item.startsWith(`- ${start}`));
  expect(found, start).toBeDefined();
  return (found ?? "").replace(/\s+/g, " ");
}

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
  const grants = bullet("The functions' table grants are now per kind of partition");

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
