/**
 * Every DynamoDB request the three functions send, recorded while they run against DynamoDB Local, must be allowed by
 * the IAM statements the CDK app gives that function's role: the action, and for item actions the
 * `dynamodb:LeadingKeys` condition (every partition key the request names matches one of the role's patterns).
 * So a new key layout or a new call fails here before it fails in AWS with AccessDenied. The other way round, every
 * action a role is granted on a partition must be one some recorded request sends there (the last test): a grant no
 * code path uses is taken away, so no role keeps, say, a delete of quarantine records its function never sends.
 * That test runs every recording scenario it finds not yet run, so it holds alone (`-t`) and in any order.
 */
import { randomUUID } from "node:crypto";
import { PutSecretValueCommand } from "@aws-sdk/client-secrets-manager";
import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import { Template } from "aws-cdk-lib/assertions";
import { mockClient } from "aws-sdk-client-mock";
import { beforeAll, describe, expect, it } from "vitest";
import type { HandlerOptions } from "../../shared/aws/handlers.js";
import { LIVE_BY_TTL_INDEX, quarantinePartition, revokedFamilyItemKey, type TableUser } from "../../shared/aws/keys.js";
import { DynamoSnapshotStore } from "../../shared/aws/snapshot-store.js";
import { contentHash } from "../../shared/bridge/hash.js";
import type { BridgeEventDetail } from "../../shared/bridge/ports.js";
import { parseTenantConfig } from "../../infra/tenant-config.js";
import { ACCESS_TOKEN_TTL_SECONDS } from "../../sandbox/index.js";
import { localDynamoClient } from "../aws/support/dynamo.js";
import { buildTestApp, roleStatements } from "../infra/helpers.js";
import { allows, type PolicyStatement } from "../infra/iam-evaluator.js";
import { createHarness, TENANT, type Harness } from "./support/harness.js";

/** The DynamoDB statements of each function's role in a stack synthesized for the harness's tenant. */
let policies: Record<TableUser, PolicyStatement[]>;
beforeAll(() => {
  const tenant = parseTenantConfig({ id: TENANT, environment: "sandbox", alarms: { email: "ops@falcon.test" } });
  const [stack] = buildTestApp({ tenants: [tenant] }).stacks;
  const template = Template.fromStack(stack!);
  const of = (role: string) => roleStatements(template, role).filter((s) => [s.Action].flat().some((a) => a.startsWith("dynamodb:")));
  policies = { pollTransactions: of("PollTransactionsRole"), pollCards: of("PollCardsRole"), rotateToken: of("RotateTokenRole") };
  // The recorded calls carry only their partition keys: a condition on any other key needs this test to record it.
  const conditionKeys = Object.values(policies).flatMap((statements) => statements.flatMap((s) => Object.values(s.Condition ?? {}).flatMap(Object.keys)));
  expect(conditionKeys.filter((key) => key !== "dynamodb:LeadingKeys")).toEqual([]);
});

/** One request as the low-level client sent it. */
interface Call {
  readonly user: TableUser;
  readonly action: string;
  readonly leadingKeys: readonly string[];
  /** The index a Query names (its resource is then `<table ARN>/index/<name>`, not the table's ARN). */
  readonly index?: string;
}

const text = (value: unknown): string => (typeof value === "object" && value !== null && "S" in value ? String((value as { S: unknown }).S) : String(value));

/** The partition keys a request names, as IAM's dynamodb:LeadingKeys sees them. */
function leadingKeysOf(action: string, input: Record<string, unknown>): string[] {
  type Keyed = { pk?: unknown };
  switch (action) {
    case "dynamodb:GetItem":
    case "dynamodb:DeleteItem":
    case "dynamodb:UpdateItem":
      return [text((input.Key as Keyed).pk)];
    case "dynamodb:PutItem":
      return [text((input.Item as Keyed).pk)];
    case "dynamodb:Query": {
      const placeholder = /\bpk\s*=\s*(:\w+)/.exec(String(input.KeyConditionExpression))?.[1] ?? "";
      return [text((input.ExpressionAttributeValues as Record<string, unknown>)[placeholder])];
    }
    case "dynamodb:BatchGetItem":
      return Object.values(input.RequestItems as Record<string, { Keys: Keyed[] }>).flatMap((r) => r.Keys.map((k) => text(k.pk)));
    case "dynamodb:BatchWriteItem":
      return Object.values(input.RequestItems as Record<string, { PutRequest?: { Item: Keyed }; DeleteRequest?: { Key: Keyed } }[]>).flatMap((requests) =>
        requests.map((r) => text(r.PutRequest?.Item.pk ?? r.DeleteRequest?.Key.pk)),
      );
    case "dynamodb:Scan":
      return [];
    default:
      throw new Error(`no leading-key rule for ${action}: add one to this test`);
  }
}

/** The condition operator of the roles' dynamodb:LeadingKeys scopes. */
const LEADING_KEYS_OPERATOR = "ForAllValues:StringLike";

/** The index a statement is on (its resource `<table ARN>/index/<name>`), or undefined for the table. */
const onIndex = (s: PolicyStatement) => JSON.stringify(s.Resource).match(/\/index\/([^"]*)"/)?.[1];

/**
 * Whether the role of the call's function allows it: its action, and its partition keys as dynamodb:LeadingKeys, by
 * a statement on the resource it names (the evaluator matches no resource): the table, or the index it queries.
 */
const allowed = (call: Call): boolean => {
  const statements = policies[call.user].filter((s) => onIndex(s) === call.index);
  return allows(statements, { action: call.action, context: { "dynamodb:LeadingKeys": call.leadingKeys } });
};

/** The harness of the running scenario. */
let h: Harness;
/** The requests of the running scenario. */
let calls: Call[];

/** The recording scenarios, by the name of their test; each asserts as it goes. */
const scenarios = new Map<string, () => Promise<void>>();
/** Each scenario's run, started once: by its own test, or by the last test if that comes first (run alone, reordered). */
const runs = new Map<string, Promise<readonly Call[]>>();

/** The requests of the scenario `name`, run on a fresh harness the first time they are asked for. */
function requestsOf(name: string): Promise<readonly Call[]> {
  const scenario = scenarios.get(name);
  if (scenario === undefined) throw new Error(`no recording scenario named ${name}`);
  let run = runs.get(name);
  if (run === undefined) {
    run = (async () => {
      h = await createHarness();
      calls = [];
      try {
        await scenario();
        return calls;
      } finally {
        await h.close();
      }
    })();
    runs.set(name, run);
  }
  return run;
}

/** A test that runs the scenario and keeps its requests for the last test's check that each grant is used. */
function recordingTest(name: string, scenario: () => Promise<void>): void {
  scenarios.set(name, scenario);
  it(name, async () => {
    await requestsOf(name);
  });
}

/** An EventBridge client that refuses the events of `refused` subjects for good and takes the rest. */
function eventBridge(refused: () => ReadonlySet<string>): EventBridgeClient {
  const client = new EventBridgeClient({ region: "eu-west-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } });
  mockClient(client)
    .on(PutEventsCommand)
    .callsFake((input: { Entries: PutEventsRequestEntry[] }) => ({
      FailedEntryCount: 0,
      Entries: input.Entries.map((entry) =>
        refused().has((JSON.parse(entry.Detail ?? "{}") as BridgeEventDetail).subject.id)
          ? { ErrorCode: "MalformedDetail", ErrorMessage: "detail is malformed" }
          : { EventId: randomUUID() },
      ),
    }));
  return client;
}

/** Handler options whose DynamoDB client records every request under `user`. */
function recording(user: TableUser, bus: EventBridgeClient): Partial<HandlerOptions> {
  return {
    clients: () => {
      const dynamo = localDynamoClient();
      dynamo.middlewareStack.add(
        (next, context) => async (args) => {
          const action = `dynamodb:${String(context.commandName).replace(/Command$/, "")}`;
          const input = args.input as Record<string, unknown>;
          const call = { user, action, leadingKeys: leadingKeysOf(action, input), ...(typeof input.IndexName === "string" ? { index: input.IndexName } : {}) };
          calls.push(call);
          return next(args);
        },
        { step: "build", name: "recordTableAccess" },
      );
      return { dynamo, eventBridge: bus, secrets: h.secrets.client };
    },
  };
}

describe("table access of the functions against their roles' dynamodb:LeadingKeys scope", () => {
  recordingTest("allows every request of a transaction cycle with a quarantined publish, its re-drive, a card cycle, a conform-pii pass and a rotation", async () => {
    const refusedId = h.sandbox.control
      .company(h.companyId)
      ?.transactions.all()
      .find((t) => t.client_sync_status !== "synced")?.id;
    let refused = new Set([refusedId ?? ""]);
    const bus = eventBridge(() => refused);
    // Snapshots written under full, so the conform-pii pass below rewrites some (BatchWriteItem) as well as scanning;
    // and the id of a pass stopped under redact before, which the first transaction cycle supersedes.
    const passKey = "transaction:~conform-pass";
    const passObject = { pass: "0123456789abcdef", mode: "redact" };
    const snapshots = new DynamoSnapshotStore({ doc: h.table.doc, tableName: h.table.tableName, tenant: TENANT });
    await snapshots.putMany([{ key: passKey, hash: contentHash(passObject), object: passObject, updatedAt: "2026-03-01T11:00:00.000Z" }]);
    h.env.PII_MODE = "full";
    const transactions = h.poller("transactions", recording("pollTransactions", bus));
    expect(await transactions()).toMatchObject({ status: "completed", quarantined: 1 });
    const passWrites = calls.filter((c) => c.action === "dynamodb:BatchWriteItem" && c.leadingKeys.includes(`SNAP#${TENANT}#${passKey}`));
    expect(passWrites.map((c) => c.user)).toEqual(["pollTransactions"]);
    refused = new Set();
    expect(await transactions({ action: "redrive" })).toMatchObject({ status: "completed", redriven: 1 });
    expect(await h.poller("cards", recording("pollCards", bus))()).toMatchObject({ status: "completed" });
    h.env.PII_MODE = "redact";
    const conform = await h.poller("transactions", recording("pollTransactions", bus))({ action: "conform-pii" });
    expect(conform).toMatchObject({ status: "completed", action: "conform-pii", outcome: "complete" });
    expect(conform.rewritten).toBeGreaterThan(0);
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotation = h.rotator(recording("rotateToken", bus));
    for (const Step of ["createSecret", "setSecret", "testSecret", "finishSecret"]) await rotation({ SecretId: h.secrets.secretId, ClientRequestToken: token, Step });

    // each function really reached the kinds of items it is scoped to
    const prefixes = (user: TableUser) => new Set(calls.filter((c) => c.user === user).flatMap((c) => c.leadingKeys.map((k) => k.split("#")[0])));
    expect(prefixes("pollTransactions")).toEqual(new Set(["LEASE", "TOKEN", "SNAP", "QUAR"]));
    expect(prefixes("pollCards")).toEqual(new Set(["LEASE", "TOKEN", "SNAP", "QUAR"]));
    expect(prefixes("rotateToken")).toEqual(new Set(["LEASE", "TOKEN"]));
    // ... with every kind of request it sends on the table: conform-pii's Scan included, which no other request of
    // theirs sends, and Query (the re-drive's and conform-pii's reads of the quarantine) by the transaction poller only.
    const actions = (user: TableUser) => [...new Set(calls.filter((c) => c.user === user && c.index === undefined).map((c) => c.action))].sort();
    const items = ["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem"];
    // UpdateItem: the quarantine's write of a record (the refused publish's).
    expect(actions("pollTransactions")).toEqual([...items, "dynamodb:Query", "dynamodb:Scan", "dynamodb:UpdateItem"]);
    expect(actions("pollCards")).toEqual(items);
    expect(actions("rotateToken")).toEqual(["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem"]);

    // ... and both pollers counted the quarantine on its index after their cycles (QuarantineSize).
    const counts = (user: TableUser) => calls.filter((c) => c.user === user && c.index !== undefined).map((c) => [c.action, c.index, c.leadingKeys]);
    for (const user of ["pollTransactions", "pollCards"] as const) expect(counts(user)).toContainEqual(["dynamodb:Query", LIVE_BY_TTL_INDEX, [`QUAR#${TENANT}`]]);

    const denied = calls.filter((call) => !allowed(call));
    expect(denied).toEqual([]);
  });

  for (const [kind, user] of [
    ["transactions", "pollTransactions"],
    ["cards", "pollCards"],
  ] as const) {
    recordingTest(`allows the PII salt guard of the ${kind} poller under hash: recording the fingerprint on a new table, and checking another salt`, async () => {
      const bus = eventBridge(() => new Set());
      h.env.PII_MODE = "hash";
      const poll = () => h.poller(kind, recording(user, bus))();
      expect(await poll()).toMatchObject({ status: "completed" });
      // Another salt: the transaction poller scans for snapshots before refusing it; the card poller refuses outright.
      await h.secrets.client.send(
        new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify({ ...h.secrets.current(), pii_salt: "another-salt-0123456789" }) }),
      );
      await expect(poll()).rejects.toMatchObject({ name: "PiiSaltChangedError" });
      const salt = [...new Set(calls.filter((c) => c.leadingKeys.includes(`PII#${TENANT}`)).map((c) => c.action))].sort();
      expect(salt).toEqual(["dynamodb:GetItem", "dynamodb:PutItem"]);
      expect(calls.filter((call) => !allowed(call))).toEqual([]);
    });
  }

  recordingTest("allows the quarantine writes of both pollers: a record new, found again, and past its TTL but not yet swept (put whole)", async () => {
    const company = h.sandbox.control.company(h.companyId)!;
    const refused = company.transactions.all().find((t) => t.client_sync_status !== "synced")!;
    const bus = eventBridge(() => new Set([refused.id]));
    // An id the client's schema rejects (a card id starts with CA): quarantined on every walk.
    const [model] = company.cards;
    (company.cards as unknown as object[]).push({ ...model, id: "ZZ0000000001" });
    /** Ends the retention of every quarantine record, as time would; DynamoDB sweeps such items days later. */
    const expireQuarantine = async () => {
      const { tableName, doc } = h.table;
      const held = await doc.send(new QueryCommand({ TableName: tableName, KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": quarantinePartition(TENANT) } }));
      expect(held.Items?.length).toBeGreaterThan(0);
      for (const { pk, sk } of held.Items ?? []) {
        await doc.send(new UpdateCommand({ TableName: tableName, Key: { pk, sk }, UpdateExpression: "SET #ttl = :past", ExpressionAttributeNames: { "#ttl": "ttl" }, ExpressionAttributeValues: { ":past": 1 } }));
      }
    };
    const transactions = h.poller("transactions", recording("pollTransactions", bus));
    const cards = h.poller("cards", recording("pollCards", bus));
    expect(await transactions()).toMatchObject({ status: "completed", quarantined: 1 });
    expect(await cards()).toMatchObject({ status: "completed", quarantined: 1 });
    await expireQuarantine();
    // The refused transaction offered again (an ERP reset), the card listed again on the next walk.
    company.transactions.setSyncStatus(refused, "not_synced");
    h.sandbox.control.advanceClock(600);
    expect(await transactions()).toMatchObject({ status: "completed", quarantined: 1 });
    expect(await cards()).toMatchObject({ status: "completed", quarantined: 1 });
    const onQuarantine = (user: TableUser) =>
      [...new Set(calls.filter((c) => c.user === user && c.index === undefined && c.leadingKeys.includes(quarantinePartition(TENANT))).map((c) => c.action))].sort();
    for (const user of ["pollTransactions", "pollCards"] as const) expect(onQuarantine(user)).toEqual(["dynamodb:PutItem", "dynamodb:UpdateItem"]);
    expect(calls.filter((call) => !allowed(call))).toEqual([]);
  });

  recordingTest("allows each function's removal of a revoked-family marker left for an older secret version (the secret re-onboarded)", async () => {
    const bus = eventBridge(() => new Set());
    const { tableName, doc } = h.table;
    const marker = revokedFamilyItemKey(TENANT);
    const leaveMarker = () => doc.send(new PutCommand({ TableName: tableName, Item: { ...marker, secretVersionId: "an-older-version", at: "2026-01-01T00:00:00.000Z" } }));
    const markerLeft = async () => (await doc.send(new GetCommand({ TableName: tableName, Key: marker, ConsistentRead: true }))).Item !== undefined;
    const token = randomUUID();
    const runs: [TableUser, () => Promise<unknown>][] = [
      ["pollTransactions", () => h.poller("transactions", recording("pollTransactions", bus))()],
      ["pollCards", () => h.poller("cards", recording("pollCards", bus))()],
      [
        "rotateToken",
        () => {
          h.secrets.startRotation(token);
          return h.rotator(recording("rotateToken", bus))({ SecretId: h.secrets.secretId, ClientRequestToken: token, Step: "createSecret" });
        },
      ],
    ];
    for (const [user, run] of runs) {
      await leaveMarker();
      await run();
      expect(await markerLeft(), user).toBe(false);
      expect(calls.some((c) => c.user === user && c.action === "dynamodb:DeleteItem" && c.leadingKeys.includes(marker.pk)), user).toBe(true);
    }
    expect(calls.filter((call) => !allowed(call))).toEqual([]);
  });

  recordingTest("allows the token lease renewal (UpdateItem) of a rotation and of each poller whose refresh answered slowly", async () => {
    // The token endpoint answers 11 s late: the save then starts past a third of the 30 s lease, which renews at once.
    const slowTokens: typeof h.fetch = async (input, init) => {
      const response = await h.fetch(input, init);
      if (String(input).endsWith("/oauth2/token")) h.sandbox.control.advanceClock(11);
      return response;
    };
    const bus = eventBridge(() => new Set());
    const renewedBy = (user: TableUser) =>
      calls.some((c) => c.user === user && c.action === "dynamodb:UpdateItem" && c.leadingKeys.every((key) => key.startsWith("LEASE#")));
    /** Runs `work` with its secret write held until `user` renewed the lease (a fast write could end before it). */
    const withHeldWrite = async (user: TableUser, work: () => Promise<unknown>) => {
      const write = h.secrets.holdNext("PutSecretValue");
      const running = work();
      await write.reached;
      for (let turn = 0; turn < 5_000 && !renewedBy(user); turn++) await new Promise((resolve) => setImmediate(resolve));
      write.release();
      return running;
    };
    const token = randomUUID();
    h.secrets.startRotation(token);
    const rotator = h.rotator({ ...recording("rotateToken", bus), fetch: slowTokens });
    await withHeldWrite("rotateToken", () => rotator({ SecretId: h.secrets.secretId, ClientRequestToken: token, Step: "createSecret" }));
    for (const [kind, user] of [["cards", "pollCards"], ["transactions", "pollTransactions"]] as const) {
      h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
      const poller = h.poller(kind, { ...recording(user, bus), fetch: slowTokens });
      expect(await withHeldWrite(user, () => poller())).toMatchObject({ status: "completed" });
    }
    const renewals = calls.filter((c) => c.action === "dynamodb:UpdateItem" && c.leadingKeys.every((key) => key.startsWith("LEASE#")));
    expect(renewals.map((c) => [c.user, c.leadingKeys])).toEqual([
      ["rotateToken", [`LEASE#${TENANT}#token-refresh`]],
      ["pollCards", [`LEASE#${TENANT}#token-refresh`]],
      ["pollTransactions", [`LEASE#${TENANT}#token-refresh`]],
    ]);
    expect(calls.filter((call) => !allowed(call))).toEqual([]);
  });

  it("would deny the rotation a snapshot or quarantine item, the card poller a transaction's, an action on a partition its code never sends there, and any function another tenant's items", () => {
    const rotation = (action: string, key: string) => allowed({ user: "rotateToken", action, leadingKeys: [key] });
    expect(rotation("dynamodb:GetItem", `TOKEN#${TENANT}`)).toBe(true);
    expect(rotation("dynamodb:GetItem", `SNAP#${TENANT}#card:1`)).toBe(false);
    expect(rotation("dynamodb:DeleteItem", `QUAR#${TENANT}`)).toBe(false);
    expect(rotation("dynamodb:PutItem", `LEASE#${TENANT}#cycle#transactions`)).toBe(false);
    const poller = (keys: string[], user: TableUser = "pollCards") => allowed({ user, action: "dynamodb:BatchWriteItem", leadingKeys: keys });
    expect(poller([`SNAP#${TENANT}#card:1`, `SNAP#${TENANT}#transaction:2`], "pollTransactions")).toBe(true);
    expect(poller([`SNAP#${TENANT}#card:1`, `SNAP#${TENANT}-2#card:1`])).toBe(false);
    expect(poller([`QUAR#${TENANT}-2`])).toBe(false);
    // The card poller: card snapshots only, and not the transaction cycle's lease.
    expect(poller([`SNAP#${TENANT}#card:1`])).toBe(true);
    expect(poller([`SNAP#${TENANT}#transaction:2`])).toBe(false);
    // Each partition its own actions: the card poller writes quarantine records but never deletes one (the re-drive
    // does, in the transaction poller), nor touches a snapshot but in batches, nor updates the token or a cycle lease.
    const item = (user: TableUser, action: string, key: string) => allowed({ user, action, leadingKeys: [key] });
    expect(poller([`QUAR#${TENANT}`])).toBe(false);
    expect(poller([`QUAR#${TENANT}`], "pollTransactions")).toBe(true);
    expect(item("pollCards", "dynamodb:UpdateItem", `QUAR#${TENANT}`)).toBe(true);
    expect(item("pollCards", "dynamodb:DeleteItem", `QUAR#${TENANT}`)).toBe(false);
    expect(item("pollTransactions", "dynamodb:DeleteItem", `QUAR#${TENANT}`)).toBe(false);
    expect(item("pollTransactions", "dynamodb:PutItem", `SNAP#${TENANT}#card:1`)).toBe(false);
    expect(item("pollCards", "dynamodb:UpdateItem", `TOKEN#${TENANT}`)).toBe(false);
    expect(item("pollCards", "dynamodb:UpdateItem", `LEASE#${TENANT}#cycle#cards`)).toBe(false);
    expect(item("pollCards", "dynamodb:UpdateItem", `LEASE#${TENANT}#token-refresh`)).toBe(true);
    expect(poller([`TOKEN#${TENANT}`])).toBe(false);
    expect(poller([`LEASE#${TENANT}#token-refresh`], "pollTransactions")).toBe(false);
    expect(rotation("dynamodb:GetItem", `LEASE#${TENANT}#token-refresh`)).toBe(false);
    // A batch naming partitions of two grants is refused: every key it names is checked against one statement.
    expect(poller([`SNAP#${TENANT}#card:1`, `QUAR#${TENANT}`], "pollTransactions")).toBe(false);
    // Nor the conform-pii pass id, a transaction key: only the transaction poller supersedes it after a mode change.
    expect(poller([`SNAP#${TENANT}#transaction:~conform-pass`])).toBe(false);
    expect(poller([`LEASE#${TENANT}#cycle#transactions`])).toBe(false);
    // The quarantine's records are read (Query on the table) by the transaction poller only: the card poller never lists
    // them, and would read every quarantined transaction's body.
    const query = (user: TableUser) => allowed({ user, action: "dynamodb:Query", leadingKeys: [`QUAR#${TENANT}`] });
    expect(query("pollTransactions")).toBe(true);
    expect(query("pollCards")).toBe(false);
    // The token, quarantine and PII salt partitions are granted exactly: an action a function may send to its tenant's
    // is refused on another tenant's, whose id starts with this one's.
    const itemActions = ["BatchGetItem", "BatchWriteItem", "DeleteItem", "GetItem", "PutItem", "Query", "UpdateItem"].map((a) => `dynamodb:${a}`);
    const exact = ["TOKEN", "QUAR", "PII"].flatMap((kind) => (Object.keys(policies) as TableUser[]).flatMap((user) => itemActions.map((action) => ({ user, action, kind }))));
    const granted = exact.filter(({ user, action, kind }) => item(user, action, `${kind}#${TENANT}`));
    expect(new Set(granted.map((g) => g.kind))).toEqual(new Set(["TOKEN", "QUAR", "PII"]));
    expect(granted.filter(({ user, action, kind }) => item(user, action, `${kind}#${TENANT}-2`))).toEqual([]);
    // The index: a Query of the quarantine partition by the pollers, nothing else (its entries hold leases' and the
    // token's keys too).
    const onTheIndex = (user: TableUser, action: string, key: string) => allowed({ user, action, leadingKeys: [key], index: LIVE_BY_TTL_INDEX });
    expect(onTheIndex("pollCards", "dynamodb:Query", `QUAR#${TENANT}`)).toBe(true);
    expect(onTheIndex("pollTransactions", "dynamodb:Query", `QUAR#${TENANT}`)).toBe(true);
    expect(onTheIndex("pollTransactions", "dynamodb:Query", `TOKEN#${TENANT}`)).toBe(false);
    expect(onTheIndex("pollTransactions", "dynamodb:Query", `QUAR#${TENANT}-2`)).toBe(false);
    expect(onTheIndex("rotateToken", "dynamodb:Query", `TOKEN#${TENANT}`)).toBe(false);
    expect(onTheIndex("pollTransactions", "dynamodb:Scan", `QUAR#${TENANT}`)).toBe(false);
    // Nor another index of the table, were one added.
    expect(allowed({ user: "pollCards", action: "dynamodb:Query", leadingKeys: [`QUAR#${TENANT}`], index: "other" })).toBe(false);
  });

  // Checks against the requests of every scenario above: those their tests recorded already, the rest run here.
  it("grants each function, on each partition, only actions some request of the scenarios above sent there", async () => {
    const recorded: Call[] = [];
    for (const name of scenarios.keys()) recorded.push(...(await requestsOf(name)));
    const unused: string[] = [];
    for (const user of Object.keys(policies) as TableUser[]) {
      for (const statement of policies[user]) {
        const index = onIndex(statement);
        const patterns = (statement.Condition?.[LEADING_KEYS_OPERATOR]?.["dynamodb:LeadingKeys"] as string[] | undefined) ?? [undefined];
        for (const action of [statement.Action].flat()) {
          for (const pattern of patterns) {
            // The pattern alone, evaluated as IAM would: does one of the request's partition keys fall under it?
            const under = (key: string) =>
              pattern === undefined || allows([{ Effect: "Allow", Action: action, Condition: { [LEADING_KEYS_OPERATOR]: { "dynamodb:LeadingKeys": [pattern] } } }], { action, context: { "dynamodb:LeadingKeys": [key] } });
            const used = recorded.some((c) => c.user === user && c.action === action && c.index === index && (pattern === undefined || c.leadingKeys.some(under)));
            if (!used) unused.push(`${user} ${action} ${pattern ?? "(no condition)"}${index === undefined ? "" : ` on index ${index}`}`);
          }
        }
      }
    }
    expect(unused).toEqual([]);
  });
});
