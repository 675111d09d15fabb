/**
 * The provider's free text (the error envelope's `message` and `errors[].message`) never reaches an error's message or
 * any serialisation of it: it may quote a cardholder or a token. It is kept, redacted, on `providerText` only.
 */
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { QashioClient } from "../../shared/qashio/client.js";
import { StaticTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import { BadRequestError } from "../../shared/qashio/errors.js";
import { fakeClock, json, powertoolsOutput, REQUEST_ID, scriptedFetch } from "./helpers.js";

const BEARER = "tok+with/slash=";
const EMAIL = "khalid.fernandes@falcongate.ae";
const NAME = "Khalid Fernandes";
const OTHER_TOKEN = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXV";
const LEAKS = [EMAIL, NAME, OTHER_TOKEN, BEARER, encodeURIComponent(BEARER), "tok%2bwith"];

const echoingBody = {
  status_code: 400,
  message: `cannot acknowledge for cardholder ${EMAIL} (${NAME}); token ${OTHER_TOKEN}; Authorization: Bearer ${encodeURIComponent(BEARER)}`,
  errors: [{ field: "transaction_ids.0", code: "NOT_FOUND", message: `${NAME} <${EMAIL}> has no such transaction (bearer ${BEARER})` }],
  meta: { request_id: REQUEST_ID, timestamp: "2025-01-15T12:00:00Z" },
};

async function echoedError(): Promise<BadRequestError> {
  const client = new QashioClient({
    baseUrl: "https://api.example.test",
    tokenProvider: new StaticTokenProvider(BEARER),
    fetch: scriptedFetch(json(400, echoingBody)),
    clock: fakeClock(),
  });
  const error = await client.acknowledgeTransactions(["8f0e7c1a-1b2c-4d3e-8f4a-5b6c7d8e9f00"]).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(BadRequestError);
  return error as BadRequestError;
}

function expectNoLeak(text: string): void {
  for (const leak of LEAKS) expect(text, `"${leak}" leaked`).not.toContain(leak);
}

describe("provider free text in errors", () => {
  it("keeps the envelope's message out of the error's message: status, method and path only", async () => {
    const error = await echoedError();
    expect(error.message).toBe("POST /public/v1/erp/transactions/acknowledge answered 400");
    expect(error).toMatchObject({
      status: 400,
      requestId: REQUEST_ID,
      errors: [{ field: "transaction_ids.0", code: "NOT_FOUND", message: "" }],
    });
  });

  it("leaves it out of String(err), the stack, JSON.stringify, util.inspect and Powertools' error formatting", async () => {
    const error = await echoedError();
    expectNoLeak(String(error));
    expectNoLeak(error.stack ?? "");
    expectNoLeak(JSON.stringify(error));
    expectNoLeak(inspect(error, { depth: 5 }));
    const logged = powertoolsOutput((logger) => {
      logger.error("Cycle failed", error);
      logger.error("Cycle failed", { error });
    });
    expect(logged).toContain("answered 400");
    expect(logged).toContain(REQUEST_ID);
    expectNoLeak(logged);
  });

  it("keeps it, redacted, on a non-enumerable providerText for debugging by hand", async () => {
    const error = await echoedError();
    expect(Object.keys(error)).not.toContain("providerText");
    expect(Object.getOwnPropertyDescriptor(error, "providerText")?.enumerable).toBe(false);
    expect(error.providerText).toEqual({
      message: `cannot acknowledge for cardholder ${EMAIL} (${NAME}); token ${OTHER_TOKEN}; Authorization: Bearer ***`,
      errors: [`${NAME} <${EMAIL}> has no such transaction (bearer ***)`],
    });
  });

  it("keeps the first 200 characters of the message, cut after redacting so no part of a secret is left at the cut", async () => {
    const bearer = "at_0a1b2c3d4e5f60718293a4b5c6d7e8f9";
    const message = `${"x".repeat(190)} ${bearer} ${"y".repeat(100)}`;
    const client = new QashioClient({
      baseUrl: "https://api.example.test",
      tokenProvider: new StaticTokenProvider(bearer),
      fetch: scriptedFetch(json(400, { status_code: 400, message, errors: [] })),
      clock: fakeClock(),
    });
    const error = (await client.getCompanySummary().catch((e: unknown) => e)) as BadRequestError;
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.providerText?.message).toBe(`${"x".repeat(190)} *** ${"y".repeat(5)}`);
  });

  it("redacts a secret quoted back percent-encoded as encodeURIComponent writes it (%20, upper-case hex), not only as a form writes it", async () => {
    // A form writes the space as +: a secret holding a space and a character escaped with a hex letter (%2F) has a
    // percent-encoded form that neither the form's nor the lower-case one matches.
    const bearer = "at_0a1b 2c3d/4e5f";
    const quoted = encodeURIComponent(bearer);
    const client = new QashioClient({
      baseUrl: "https://api.example.test",
      tokenProvider: new StaticTokenProvider(bearer),
      fetch: scriptedFetch(json(400, { status_code: 400, message: `bad token ${quoted}`, errors: [{ field: null, code: "INVALID", message: `token=${quoted}` }] })),
      clock: fakeClock(),
    });
    const error = (await client.getCompanySummary().catch((e: unknown) => e)) as BadRequestError;
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.providerText).toEqual({ message: "bad token ***", errors: ["token=***"] });
  });

  it("keeps no message on providerText when the envelope's message is empty", async () => {
    const client = new QashioClient({
      baseUrl: "https://api.example.test",
      tokenProvider: new StaticTokenProvider(BEARER),
      fetch: scriptedFetch(json(400, { status_code: 400, message: "", errors: [] })),
      clock: fakeClock(),
    });
    const error = (await client.getCompanySummary().catch((e: unknown) => e)) as BadRequestError;
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.providerText).not.toHaveProperty("message");
    expect(error.providerText).toEqual({ errors: [] });
  });
});
