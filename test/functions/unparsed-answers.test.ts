import { Readable } from "node:stream";
import { GetCommand } from "@aws-sdk/lib-dynamodb";
import { afterEach, beforeEach, expect, it } from "vitest";
import { accessTokenItemKey } from "../../shared/aws/keys.js";
import { createHarness, TENANT, type Harness } from "./support/harness.js";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => h.close());

it("logs no piece of the access token when DynamoDB's answer for the access-token item is not JSON (V8's parser quotes the text)", async () => {
  expect((await h.poller("transactions")()).status).toBe("completed");
  const key = accessTokenItemKey(TENANT);
  const item = await h.table.doc.send(new GetCommand({ TableName: h.table.tableName, Key: key, ConsistentRead: true }));
  const accessToken = (item.Item as { accessToken: string }).accessToken;
  // A body garbled on the way (a proxy), its first fault where a value begins, at the token's signature: V8's parser
  // quotes the 10 characters on either side of a fault there.
  const signatureAt = accessToken.lastIndexOf(".") + 1;
  const signature = accessToken.slice(signatureAt);
  const garbled = `{"Item":{"pk":{"S":"${key.pk}"},"sk":{"S":"ACCESS"},"accessToken":{"S":["${accessToken.slice(0, signatureAt)}",${signature}"]}}}`;
  const clients = h.clients((dynamo) =>
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const answer = (await next(args)) as { response: { body: unknown } };
        if (context.commandName === "GetItemCommand" && JSON.stringify((args.input as { Key?: unknown }).Key).includes('"ACCESS"')) {
          answer.response.body = Readable.from([Buffer.from(garbled)]);
        }
        return answer;
      },
      // Inside the SDK's deserializer: the answer as it came over the wire.
      { step: "deserialize", priority: "low", name: "garbleAccessItem" },
    ),
  );
  h.output.length = 0;
  const failed = await h.poller("transactions", { clients })().catch((error: unknown) => error);
  expect(failed).toBeInstanceOf(Error);
  const logged = h.output.join("\n");
  expect(logged).toContain("SyntaxError");
  expect(logged).not.toContain(signature.slice(0, 8));
  expect((failed as Error).message).not.toContain(signature.slice(0, 8));
});
