import { Readable } from "node:stream";
import { inspect } from "node:util";
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { describe, expect, it } from "vitest";
import { UNPARSED_ANSWER_MESSAGE, dropUnparsedAnswers, withoutAnswerBody } from "../../shared/aws/unparsed-answers.js";

/** A DynamoDB client whose every call is answered `status` with `body`, counting the requests it sends. */
function answering(status: number, body: string, headers: Record<string, string> = {}) {
  const sent = { count: 0 };
  const client = new DynamoDBClient({
    region: "eu-west-1",
    credentials: { accessKeyId: "x", secretAccessKey: "x" },
    maxAttempts: 3,
    requestHandler: {
      handle: async () => {
        sent.count += 1;
        return { response: { statusCode: status, headers: { "content-type": "application/x-amz-json-1.0", ...headers }, body: Readable.from([Buffer.from(body)]) } };
      },
    },
  });
  return { client, sent };
}

const get = new GetItemCommand({ TableName: "t", Key: { pk: { S: "TOKEN#acme" }, sk: { S: "ACCESS" } } });
/** A token the parser quotes: its fault sits where a value begins, right before it. */
const TOKEN = "rt-0123456789abcdefQUOTED";
const GARBLED = `{"Item":{"heldRefreshToken":{"S":${TOKEN}"}}}`;

describe("dropUnparsedAnswers", () => {
  it("fails a call on an answer it cannot parse with an error quoting and holding nothing of the body", async () => {
    const plain = answering(200, GARBLED);
    // Without it, the SDK's error quotes the token (the reason for this module).
    expect(((await plain.client.send(get).catch((e: unknown) => e)) as Error).message).toContain(TOKEN.slice(0, 10));
    const { client } = answering(200, GARBLED, { "x-amzn-requestid": "req-1" });
    dropUnparsedAnswers(client);
    const error = (await client.send(get).catch((e: unknown) => e)) as SyntaxError & { $metadata?: { httpStatusCode?: number; requestId?: string } };
    expect(error).toBeInstanceOf(SyntaxError);
    expect(error.message).toBe(UNPARSED_ANSWER_MESSAGE);
    expect(error.$metadata).toMatchObject({ httpStatusCode: 200, requestId: "req-1" });
    expect(inspect(error, { showHidden: true, depth: 10 })).not.toContain(TOKEN.slice(3, 11));
    // The answer's head stays hidden, as on the SDK's own error: a log line that serializes the error shows no headers.
    expect(JSON.stringify(error)).not.toContain("x-amzn-requestid");
  });

  it("leaves the SDK's retries as they were: a 5xx answered in HTML is tried again, its status kept", async () => {
    const { client, sent } = answering(503, "<html>Service Unavailable</html>");
    dropUnparsedAnswers(client);
    const error = (await client.send(get).catch((e: unknown) => e)) as SyntaxError & { $metadata?: { httpStatusCode?: number } };
    expect(error.message).toBe(UNPARSED_ANSWER_MESSAGE);
    expect(error.$metadata?.httpStatusCode).toBe(503);
    expect(sent.count).toBe(3);
  });

  it("replaces the error before a middleware of the build step sees it: X-Ray's, which records a failed call's message", async () => {
    const { client } = answering(200, GARBLED);
    const seen: string[] = [];
    // As the tracer sets a client up (handlers.ts): X-Ray's middleware (aws-xray-sdk-core) first, at the build step.
    (client.middlewareStack as { add: (m: unknown, o: unknown) => void }).add(
      (next: (args: unknown) => Promise<unknown>) => async (args: unknown) =>
        next(args).catch((error: unknown) => {
          seen.push((error as Error).message);
          throw error;
        }),
      { step: "build", name: "XRaySDKMiddleware" },
    );
    dropUnparsedAnswers(client);
    await client.send(get).catch(() => undefined);
    expect(seen).toEqual([UNPARSED_ANSWER_MESSAGE]);
  });

  it("keeps the answer's head for the SDK's signer: a Date far from the client's clock still corrects its skew", async () => {
    // The signer reads the Date header of a failed answer only from a head with a numeric status and headers.
    const { client } = answering(503, "<html>Service Unavailable</html>", { date: "Wed, 01 Jan 2020 00:00:00 GMT" });
    dropUnparsedAnswers(client);
    const error = (await client.send(get).catch((e: unknown) => e)) as SyntaxError & { $metadata?: { clockSkewCorrected?: boolean } };
    expect(error.message).toBe(UNPARSED_ANSWER_MESSAGE);
    expect(error.$metadata?.clockSkewCorrected).toBe(true);
    expect(client.config.systemClockOffset).toBeLessThan(-86_400_000);
  });

  it("passes any other failure on as it is, and a client set up twice works as once", async () => {
    const { client } = answering(400, JSON.stringify({ __type: "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException", message: "Requested resource not found" }));
    dropUnparsedAnswers(client);
    dropUnparsedAnswers(client);
    const error = (await client.send(get).catch((e: unknown) => e)) as Error;
    expect(error.name).toBe("ResourceNotFoundException");
    expect(error.message).toBe("Requested resource not found");
  });
});

describe("withoutAnswerBody", () => {
  it("passes on any other thrown value as it is, null and strings included, rather than failing on it", () => {
    const other = new Error("ResourceNotFoundException");
    for (const thrown of [null, undefined, "a string", 42, other]) expect(withoutAnswerBody(thrown)).toBe(thrown);
  });

  it("replaces an XML protocol's parse failure too: not a SyntaxError, but holding the whole body as $responseBodyText", () => {
    // As the SDK's XML deserializer leaves it: the XML parser's own error, the body hung on it unenumerated.
    const parseFailure = Object.assign(new Error(`Unexpected close tag at ...${TOKEN}...`), { $metadata: { httpStatusCode: 200, requestId: "req-2" } });
    Object.defineProperty(parseFailure, "$responseBodyText", { value: `<Secret>${TOKEN}</Secret>` });
    const kept = withoutAnswerBody(parseFailure) as SyntaxError & { $metadata?: unknown };
    expect(kept).toBeInstanceOf(SyntaxError);
    expect(kept.message).toBe(UNPARSED_ANSWER_MESSAGE);
    expect(kept.$metadata).toEqual({ httpStatusCode: 200, requestId: "req-2" });
    expect(inspect(kept, { showHidden: true, depth: 10 })).not.toContain(TOKEN.slice(3, 11));
  });
});
