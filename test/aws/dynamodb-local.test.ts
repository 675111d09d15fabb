import { DescribeTableCommand } from "@aws-sdk/client-dynamodb";
import { GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestTable, type TestTable } from "./support/dynamo.js";

describe("DynamoDB Local test fixture", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await createTestTable();
  });
  afterAll(async () => table.drop());

  it("creates a fresh table keyed by pk and sk", async () => {
    const description = await table.client.send(new DescribeTableCommand({ TableName: table.tableName }));
    expect(description.Table?.KeySchema).toEqual([
      { AttributeName: "pk", KeyType: "HASH" },
      { AttributeName: "sk", KeyType: "RANGE" },
    ]);
  });

  it("stores and reads back an item", async () => {
    await table.doc.send(new PutCommand({ TableName: table.tableName, Item: { pk: "a", sk: "b", n: 1 } }));
    const read = await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: "a", sk: "b" } }));
    expect(read.Item).toEqual({ pk: "a", sk: "b", n: 1 });
  });
});
