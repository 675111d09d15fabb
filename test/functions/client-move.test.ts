/**
 * Moving a tenant to another provider client (runbook: the new client_id and client_secret into the secret, then
 * `authorize --secret-id`) while a poller container is warm: its runtime was built with the old client.
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { PutSecretValueCommand } from "@aws-sdk/client-secrets-manager";
import { ACCESS_TOKEN_TTL_SECONDS, SANDBOX_CLIENT, SANDBOX_IN_PROCESS_URL } from "../../sandbox/index.js";
import { exchangeCode, refresh } from "../../shared/qashio/auth/oauth.js";
import { createHarness, REDIRECT_URI, type Harness } from "./support/harness.js";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => h.close());

const putSecret = (value: Record<string, unknown>) =>
  h.secrets.client.send(new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify(value) }));

/** A second client of the integrator at the provider (the sandbox registers one), the one the tenant moves to. */
const B = { clientId: "client-b", clientSecret: "secret-b" };
function registerSecondClient(): void {
  const oauth = h.sandbox.control.state.oauth as unknown as Record<string, unknown>;
  const known = (id: string, secret?: string) =>
    (id === SANDBOX_CLIENT.clientId && (secret === undefined || secret === SANDBOX_CLIENT.clientSecret)) || (id === B.clientId && (secret === undefined || secret === B.clientSecret));
  oauth.isClient = (id: string) => known(id);
  oauth.authenticateClient = (id: string, secret: string) => {
    if (!known(id, secret)) throw Object.assign(new Error("client authentication failed"), { status: 401, error: "invalid_client" });
  };
}

it("never takes the new family for revoked in a container built with the old client, and the next invocation uses the new one", async () => {
  registerSecondClient();
  const poller = h.poller("transactions"); // one warm container
  expect((await poller()).status).toBe("completed");
  h.sandbox.control.advanceClock(10 * 60); // its secret cache was read again since, unchanged
  expect((await poller()).status).toBe("completed");

  // The move: the new client into the secret, then a sign-in with it.
  await putSecret({ ...h.secrets.current(), client_id: B.clientId, client_secret: B.clientSecret });
  const oauthB = { baseUrl: SANDBOX_IN_PROCESS_URL, clientId: B.clientId, clientSecret: B.clientSecret, fetch: h.sandbox.fetch };
  const code = h.sandbox.control.issueAuthorizationCode({ companyId: h.companyId, redirectUri: REDIRECT_URI, clientId: B.clientId });
  const tokens = await exchangeCode(oauthB, { code, redirectUri: REDIRECT_URI });
  await putSecret({ ...h.secrets.current(), refresh_token: tokens.refresh_token });

  // Its access token is due before its secret cache runs out: it must not present the new token with the old client.
  h.sandbox.control.advanceClock(4 * 60 + 30);
  const presented = h.refreshTokensPresented.length;
  await expect(poller()).rejects.toMatchObject({ name: "CycleAbortedError", cause: { name: "ProviderClientChangedError" } });
  expect(h.refreshTokensPresented).toHaveLength(presented);
  expect(await h.tokenStore().revokedVersion()).toBeUndefined();

  // The same container rebuilds its runtime and refreshes with the new client; the family stays valid.
  expect((await poller()).status).toBe("completed");
  expect(await refresh(oauthB, h.secrets.current().refresh_token as string).then(() => true, () => false)).toBe(true);
});

/** One warm container whose first tick refreshes while neither the secret nor the table can be written: it holds the tokens. */
async function containerHoldingTokens(): Promise<{ poller: ReturnType<Harness["poller"]>; spent: string }> {
  const outage = h.tokenWriteOutage();
  const poller = h.poller("transactions", { clients: outage.clients });
  const spent = h.secrets.current().refresh_token as string;
  outage.on = true;
  await expect(poller()).rejects.toMatchObject({ name: "CycleAbortedError" });
  expect(h.refreshTokensPresented).toEqual([spent]);
  outage.on = false;
  return { poller, spent };
}

it("drops the old client's tokens a container held in memory once the tenant moved to a new client and re-authorized: the new family is kept", async () => {
  registerSecondClient();
  const { poller, spent } = await containerHoldingTokens();
  await putSecret({ ...h.secrets.current(), client_id: B.clientId, client_secret: B.clientSecret });
  const oauthB = { baseUrl: SANDBOX_IN_PROCESS_URL, clientId: B.clientId, clientSecret: B.clientSecret, fetch: h.sandbox.fetch };
  const code = h.sandbox.control.issueAuthorizationCode({ companyId: h.companyId, redirectUri: REDIRECT_URI, clientId: B.clientId });
  const tokens = await exchangeCode(oauthB, { code, redirectUri: REDIRECT_URI });
  await putSecret({ ...h.secrets.current(), refresh_token: tokens.refresh_token });

  h.sandbox.control.advanceClock(5 * 60 + 1); // the container's secret cache runs out: it rebuilds with client B
  expect((await poller()).status).toBe("completed");
  expect(h.refreshTokensPresented.slice(1)).not.toContain(spent);
  expect(h.output.join("\n")).toContain("the token store changed after the rotated tokens failed to save");
  expect(await refresh(oauthB, h.secrets.current().refresh_token as string).then(() => true, () => false)).toBe(true);
});

it("saves the tokens a container held in memory when the secret's client was changed by mistake, so putting the right one back keeps the family", async () => {
  registerSecondClient();
  const { poller, spent } = await containerHoldingTokens();
  const right = { client_id: h.secrets.current().client_id, client_secret: h.secrets.current().client_secret };
  await putSecret({ ...h.secrets.current(), client_id: B.clientId, client_secret: B.clientSecret });
  h.sandbox.control.advanceClock(5 * 60 + 1); // rebuilt with client B, it saves the held tokens before anything else
  await poller().catch(() => undefined);
  expect(h.secrets.current()).toMatchObject({ client_id: B.clientId });
  expect(h.secrets.current().refresh_token).not.toBe(spent);

  // The runbook's fix for a slip: the right client back, the refresh token unchanged.
  await putSecret({ ...h.secrets.current(), ...right });
  h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
  expect((await poller()).status).toBe("completed");
  expect(h.refreshTokensPresented.slice(1)).not.toContain(spent);
  expect(await h.familyStillValid()).toBe(true);
});
