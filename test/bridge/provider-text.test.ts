/**
 * A provider error whose free text quotes a cardholder and a token stops a cycle without that text reaching the
 * abort message, the engine's logs, or any serialisation of the error a Lambda or the CLI would write out.
 */
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { CycleAbortedError } from "../../shared/bridge/errors.js";
import { powertoolsOutput } from "../qashio/helpers.js";
import { makeRig } from "./fakes.js";
import { clientOverFake } from "./provider-client.js";

const EMAIL = "khalid.fernandes@falcongate.ae";
const NAME = "Khalid Fernandes";
const TOKEN = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXV";
const LEAKS = [EMAIL, NAME, TOKEN];

describe("a provider refusal quoting personal data", () => {
  it("aborts the cycle naming the call, status and field codes, never the provider's text", async () => {
    const rig = makeRig({ pii: { mode: "hash", salt: "s".repeat(16) } });
    rig.provider.addTransaction();
    const provider = clientOverFake(rig.provider, rig.clock, (call) =>
      call.op === "acknowledgeTransactions"
        ? {
            status: 400,
            message: `cannot acknowledge for cardholder ${EMAIL} (${NAME}); token ${TOKEN}`,
            errors: [{ field: "transaction_ids", code: "REJECTED", message: `${NAME} <${EMAIL}> is blocked` }],
          }
        : undefined,
    );
    const error = (await pollTransactions({ ...rig.deps, provider }).catch((e: unknown) => e)) as CycleAbortedError;
    expect(error).toBeInstanceOf(CycleAbortedError);
    expect(error.message).toBe(
      "transactions cycle stopped: acknowledge transactions failed (BadRequestError 400: POST /public/v1/erp/transactions/acknowledge " +
        "answered 400; errors: transaction_ids REJECTED); work done so far is durable and the next cycle resumes",
    );
    const logged = powertoolsOutput((logger) => {
      logger.error("Cycle failed", error);
      logger.error("Cycle failed", { error: { name: error.name, message: error.message } });
    });
    expect(logged).toContain("transaction_ids REJECTED");
    const texts = [String(error), error.stack ?? "", JSON.stringify(error), inspect(error, { depth: 5 }), logged, JSON.stringify(rig.logger.lines)];
    for (const text of texts) {
      for (const leak of LEAKS) expect(text, `"${leak}" leaked`).not.toContain(leak);
    }
  });
});

describe("a provider refusal through the real client", () => {
  it("still leaves only the ids it names listed, while a code echoing the bearer token reaches no log", async () => {
    const rig = makeRig();
    const txns = Array.from({ length: 3 }, () => rig.provider.addTransaction());
    const stuck = txns[1]!.id;
    rig.provider.beforeCall = (call) => {
      if (call.op !== "acknowledgeTransactions" || !call.ids.includes(stuck)) return;
      // clientOverFake sends the bearer token "token"; this provider quotes it as the code.
      const errors = [{ field: `transaction_ids.${call.ids.indexOf(stuck)}`, code: "token", message: `${stuck} is locked` }];
      throw Object.assign(new Error("refused"), { status: 400, errors });
    };
    const report = await pollTransactions({ ...rig.deps, provider: clientOverFake(rig.provider, rig.clock) });
    expect(report.outcome).toBe("complete");
    expect(rig.provider.pending().map((t) => t.id)).toEqual([stuck]);
    const warning = rig.logger.lines.find((l) => l.message === "provider refused to acknowledge some transactions; they stay listed");
    expect(warning?.attributes).toEqual({ ids: [stuck], codes: ["?"] });
  });
});

describe("a provider refusal from a ProviderPort other than the client", () => {
  it("names fields and codes in the abort message by the client's rule: identifiers, dotted or indexed, up to 128 characters", async () => {
    const rig = makeRig();
    rig.provider.addTransaction();
    const long = `line_items[0].amount.${"b".repeat(60)}`;
    rig.provider.beforeCall = (call) => {
      if (call.op !== "acknowledgeTransactions") return;
      const errors = [
        { field: "transaction-ids", code: "REJECTED", message: "" },
        { field: long, code: "OUT_OF_RANGE", message: "" },
      ];
      throw Object.assign(new Error("refused"), { status: 400, errors });
    };
    const error = (await pollTransactions(rig.deps).catch((e: unknown) => e)) as CycleAbortedError;
    expect(error).toBeInstanceOf(CycleAbortedError);
    expect(error.message).toContain(`errors: ? REJECTED, ${long} OUT_OF_RANGE)`);
  });

  it("logs the refused ids with their codes only when the codes are identifiers", async () => {
    const rig = makeRig();
    const txns = Array.from({ length: 3 }, () => rig.provider.addTransaction());
    const stuck = [txns[0]!.id, txns[2]!.id];
    rig.provider.beforeCall = (call) => {
      if (call.op !== "acknowledgeTransactions" || !stuck.some((id) => call.ids.includes(id))) return;
      // The fake provider is the engine's port directly: nothing cleaned these codes before the engine saw them.
      const errors = stuck
        .filter((id) => call.ids.includes(id))
        .map((id, i) => ({ field: `transaction_ids.${call.ids.indexOf(id)}`, code: i === 0 ? `LOCKED_BY ${NAME} <${EMAIL}>` : "LOCKED", message: "" }));
      throw Object.assign(new Error("refused"), { status: 400, errors });
    };
    const report = await pollTransactions(rig.deps);
    expect(report.acknowledgeRefused).toBe(2);
    const warning = rig.logger.lines.find((l) => l.message === "provider refused to acknowledge some transactions; they stay listed");
    expect(warning?.attributes).toEqual({ ids: stuck, codes: ["?", "LOCKED"] });
    for (const leak of LEAKS) expect(JSON.stringify(rig.logger.lines)).not.toContain(leak);
  });
});

