import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser } from "playwright-core";
import { createSandbox, type Sandbox } from "../../sandbox/index.js";

const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available) console.warn(`authorize-browser.test.ts skipped: ${CHROMIUM} is absent (install Debian's chromium package)`);

describe.skipIf(!available)("authorization screen in headless Chromium", () => {
  let sandbox: Sandbox;
  let server: { url: string; close(): Promise<void> };
  let browser: Browser;
  let callback: Server;
  let callbackUrl: string;

  beforeAll(async () => {
    sandbox = createSandbox({ seed: 7 });
    server = await sandbox.listen(0);
    callback = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<p>done</p>");
    });
    await new Promise<void>((resolve) => callback.listen(0, "127.0.0.1", resolve));
    const address = callback.address();
    callbackUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/callback`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await new Promise<void>((resolve) => (callback ? callback.close(() => resolve()) : resolve()));
  });

  const authorizeUrl = (state: string) =>
    `${server.url}/oauth2/authorize?${new URLSearchParams({ response_type: "code", client_id: "sandbox-client", redirect_uri: callbackUrl, scope: "transactions:read cards:read", state })}`;

  it("picks a company, approves, lands on the redirect with code and state, and the code exchanges for that company's token", async () => {
    const page = await browser.newPage();
    await page.goto(authorizeUrl("state-approve"));
    expect(await page.title()).toContain("Authorize");
    const [, second] = sandbox.control.companies();
    await page.check(`input[name=company_id][value="${second?.id}"]`);
    await Promise.all([page.waitForURL(/\/callback\?/), page.click("button[value=approve]")]);
    const landed = new URL(page.url());
    expect(landed.searchParams.get("state")).toBe("state-approve");
    const code = landed.searchParams.get("code") ?? "";
    expect(code).not.toBe("");
    const res = await fetch(`${server.url}/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ grant_type: "authorization_code", client_id: "sandbox-client", client_secret: "sandbox-secret", code, redirect_uri: callbackUrl }),
    });
    expect(res.status).toBe(200);
    const tokens = (await res.json()) as { access_token: string; scope: string };
    expect(tokens.scope).toBe("transactions:read cards:read");
    const cards = await fetch(`${server.url}/public/v1/erp/cards`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    const body = (await cards.json()) as { data: { company_name: string }[] };
    expect(body.data[0]?.company_name).toBe(second?.name);
    await page.close();
  });

  it("denies and lands on the redirect with error=access_denied and the state", async () => {
    const page = await browser.newPage();
    await page.goto(authorizeUrl("state-deny"));
    await Promise.all([page.waitForURL(/\/callback\?/), page.click("button[value=deny]")]);
    const landed = new URL(page.url());
    expect(landed.searchParams.get("error")).toBe("access_denied");
    expect(landed.searchParams.get("state")).toBe("state-deny");
    expect(landed.searchParams.has("code")).toBe(false);
    await page.close();
  });

  // §4.2: `state` is opaque and the client checks it on return (§5 rule 4b), so the page must carry any text back as sent.
  it("carries back a state holding HTML's special characters exactly, the page's own form left intact", async () => {
    const state = `a"b'c<d>&amp;e" onfocus="x`;
    const page = await browser.newPage();
    await page.goto(authorizeUrl(state));
    expect(await page.locator("input[onfocus]").count()).toBe(0);
    await Promise.all([page.waitForURL(/\/callback\?/), page.click("button[value=approve]")]);
    const landed = new URL(page.url());
    expect(landed.searchParams.get("state")).toBe(state);
    expect(landed.searchParams.get("code")).not.toBeNull();
    await page.close();
  });
});
