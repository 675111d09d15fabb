/**
 * DynamoDB Local helpers for tests: a client bound to the endpoint the global setup provides, a readiness wait, and a
 * fresh table per test file shaped like the deployed one (pk/sk strings, TTL on `ttl`, the keys-only index on pk/ttl).
 */
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient, ListTablesCommand, type CreateTableCommandInput, type DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { inject } from "vitest";
import { LIVE_BY_TTL_INDEX } from "../../../shared/aws/keys.js";

const READY_TIMEOUT_MS = 30_000;
const READY_POLL_MS = 50;

/**
 * Keys and index of the deployed table (infra/constructs/tenant-table.ts), as both CreateTable and CloudFormation spell
 * them: test tables are made with them, and the infra tests check the synthesized table against them.
 */
export const DEPLOYED_TABLE_KEYS: Required<Pick<CreateTableCommandInput, "AttributeDefinitions" | "KeySchema" | "GlobalSecondaryIndexes">> = {
  AttributeDefinitions: [
    { AttributeName: "pk", AttributeType: "S" },
    { AttributeName: "sk", AttributeType: "S" },
    { AttributeName: "ttl", AttributeType: "N" },
  ],
  KeySchema: [
    { AttributeName: "pk", KeyType: "HASH" },
    { AttributeName: "sk", KeyType: "RANGE" },
  ],
  GlobalSecondaryIndexes: [
    {
      IndexName: LIVE_BY_TTL_INDEX,
      KeySchema: [
        { AttributeName: "pk", KeyType: "HASH" },
        { AttributeName: "ttl", KeyType: "RANGE" },
      ],
      Projection: { ProjectionType: "KEYS_ONLY" },
    },
  ],
};

let ready: Promise<void> | undefined;

/** A low-level client for DynamoDB Local with dummy credentials (Local accepts any). */
export function localDynamoClient(config: Partial<DynamoDBClientConfig> = {}): DynamoDBClient {
  return new DynamoDBClient({
    endpoint: inject("dynamoEndpoint"),
    region: "eu-west-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    maxAttempts: 2,
    ...config,
  });
}

/**
 * A document client for DynamoDB Local whose first `count` attempts of `command` (`PutItemCommand`, ...) reach
 * DynamoDB and are applied (or refused), and whose answers are then lost as a reset connection: the SDK's standard retry (3
 * attempts, as in SDK_TIMEOUTS) sends it again, and fails with the reset once all 3 answers are lost. `sent()` counts
 * the attempts of that command.
 */
export function docLosingAnswersOf(command: string, count = 1): { doc: DynamoDBDocumentClient; sent: () => number } {
  const client = localDynamoClient({ maxAttempts: 3 });
  let lost = 0;
  let sent = 0;
  // At the deserialize step: inside the retry loop, so it sees every attempt, after DynamoDB has answered.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== command) return next(args);
      sent += 1;
      if (lost >= count) return next(args);
      lost += 1;
      // Lost whatever it was: a refusal (a failed condition) as much as a success.
      await next(args).catch(() => undefined);
      throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    },
    { step: "deserialize", priority: "high", name: "loseAnswers" },
  );
  return { doc: DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }), sent: () => sent };
}

/** Resolves once DynamoDB Local answers ListTables; throws with its log when it never does. */
export async function waitForDynamoLocal(client: DynamoDBClient = localDynamoClient()): Promise<void> {
  ready ??= (async () => {
    const started = Date.now();
    for (;;) {
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        return;
      } catch (error) {
        if (Date.now() - started > READY_TIMEOUT_MS) {
          let log = "";
          try {
            log = readFileSync(inject("dynamoLogFile"), "utf8").slice(-2_000);
          } catch {
            log = "(no log)";
          }
          throw new Error(`DynamoDB Local did not answer at ${inject("dynamoEndpoint")} (Java 17 needed). Log:\n${log}`, {
            cause: error,
          });
        }
        // Polling a starting JVM; this wait is in the fixture, never in a test body.
        await new Promise((done) => setTimeout(done, READY_POLL_MS));
      }
    }
  })();
  return ready;
}

/** A fresh table for one test file, plus its document client and a cleanup. */
export interface TestTable {
  readonly tableName: string;
  readonly client: DynamoDBClient;
  readonly doc: DynamoDBDocumentClient;
  drop(): Promise<void>;
}

/** Creates a table with a unique name, keyed like the deployed table (`pk`, `sk`), with its index LIVE_BY_TTL_INDEX. */
export async function createTestTable(prefix = "qb"): Promise<TestTable> {
  const client = localDynamoClient();
  await waitForDynamoLocal(client);
  const tableName = `${prefix}-${randomUUID()}`;
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: "PAY_PER_REQUEST",
      ...DEPLOYED_TABLE_KEYS,
    }),
  );
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  return {
    tableName,
    client,
    doc,
    async drop() {
      await client.send(new DeleteTableCommand({ TableName: tableName }));
      doc.destroy();
    },
  };
}
