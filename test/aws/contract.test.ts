/**
 * The engine's port contract suite, run against the AWS adapters: DynamoDB ones on DynamoDB Local, the EventBridge
 * publisher on a mocked client that records what it was sent, the token store on DynamoDB Local plus a fake
 * Secrets Manager.
 */
import { randomUUID } from "node:crypto";
import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeAll } from "vitest";
import type { BridgeEventDetail, Lock } from "../../shared/bridge/ports.js";
import { EventBridgePublisher } from "../../shared/aws/event-publisher.js";
import { DynamoLeaseLock } from "../../shared/aws/lease-lock.js";
import { DynamoQuarantine } from "../../shared/aws/quarantine.js";
import { DynamoSnapshotStore } from "../../shared/aws/snapshot-store.js";
import { SecretsManagerTokenStore } from "../../shared/aws/token-store.js";
import {
  describeEventPublisherContract,
  describeLockContract,
  describeQuarantineContract,
  describeSnapshotStoreContract,
  describeTokenStoreContract,
} from "../bridge/contract/index.js";
import { createTestTable, type TestTable } from "./support/dynamo.js";
import { FakeSecretsManager } from "./support/fake-secrets-manager.js";

let table: TestTable;
/** A second table, as another stack's: a snapshot walk's cursor must not carry over to it. */
let otherTable: TestTable;
beforeAll(async () => {
  [table, otherTable] = await Promise.all([createTestTable(), createTestTable()]);
});
afterAll(async () => Promise.all([table.drop(), otherTable.drop()]));

const noop = async (): Promise<void> => {};

describeSnapshotStoreContract("DynamoSnapshotStore", async () => {
  const tenant = randomUUID();
  const make = (of = tenant) => new DynamoSnapshotStore({ doc: table.doc, tableName: table.tableName, tenant: of });
  return {
    store: make(),
    reopen: async () => make(),
    neighbour: async () => make(randomUUID()),
    foreign: async () => new DynamoSnapshotStore({ doc: otherTable.doc, tableName: otherTable.tableName, tenant }),
    cleanup: noop,
  };
});

describeQuarantineContract("DynamoQuarantine", async () => {
  const tenant = randomUUID();
  const make = () => new DynamoQuarantine({ doc: table.doc, tableName: table.tableName, tenant });
  return { quarantine: make(), reopen: async () => make(), cleanup: noop };
});

/** Scopes lease names to one fixture so fixtures sharing the table never see each other's leases. */
const scoped = (lock: Lock, scope: string): Lock => ({ tryAcquire: (name, ttlMs) => lock.tryAcquire(`${scope}#${name}`, ttlMs) });

describeLockContract("DynamoLeaseLock", async (clock) => {
  const scope = randomUUID();
  const make = () => scoped(new DynamoLeaseLock({ doc: table.doc, tableName: table.tableName, clock }), scope);
  return { lock: make(), peer: make(), cleanup: noop };
});

describeTokenStoreContract("SecretsManagerTokenStore", async () => {
  const secrets = new FakeSecretsManager(`arn:aws:secretsmanager:eu-west-1:1:secret:${randomUUID()}`, {
    client_id: "cid",
    client_secret: "cs",
    refresh_token: "rt-initial",
    pii_salt: "salt-0123456789abcdef",
  });
  const tenant = randomUUID();
  const make = () =>
    new SecretsManagerTokenStore({ secrets: secrets.client, secretId: secrets.secretId, doc: table.doc, tableName: table.tableName, tenant });
  // The secret always holds a refresh token (it is seeded at onboarding), so the store never starts empty.
  return { store: make(), reopen: async () => make(), startsEmpty: false, cleanup: noop };
});

describeEventPublisherContract("EventBridgePublisher", async () => {
  const client = new EventBridgeClient({ region: "eu-west-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } });
  const mock = mockClient(client);
  const sent: PutEventsRequestEntry[] = [];
  mock.on(PutEventsCommand).callsFake((input: { Entries: PutEventsRequestEntry[] }) => {
    sent.push(...input.Entries);
    return { FailedEntryCount: 0, Entries: input.Entries.map(() => ({ EventId: randomUUID() })) };
  });
  return {
    publisher: new EventBridgePublisher({ client, eventBusName: "bus" }),
    delivered: async () =>
      sent.map((entry) => ({
        source: entry.Source ?? "",
        detailType: entry.DetailType ?? "",
        detail: JSON.parse(entry.Detail ?? "{}") as BridgeEventDetail,
      })),
    cleanup: async () => {
      mock.restore();
    },
  };
});
