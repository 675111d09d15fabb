import { describe, expect, it } from "vitest";
import { withSecretsHidden } from "../shared/secret-attributes.js";
import { SessionReply } from "./secret-kinds.js";

describe("withSecretsHidden", () => {
  it("returns a value of any kind itself when it hides nothing in it: no copy of a class instance, a Date, a URL or a Map", () => {
    class Page {
      page = 2;
      next = { cursor: "c2" };
    }
    const values = [new Page(), new Date(0), new URL("https://app.example/cb?state=s1"), new Map([["refreshToken", "rt"]]), { at: new Date(0), pages: [new Page()] }];
    for (const value of values) expect(withSecretsHidden(value)).toBe(value);
  });

  it("leaves an Error as it is, its own members too: a logger writes it by its name and message", () => {
    const error = Object.assign(new Error("refused"), { code: "ECONNRESET" });
    expect(withSecretsHidden({ error }).error).toBe(error);
  });

  it("writes what a value's toJSON returns in its place only where it hides something there, and a value whose toJSON returns itself as its members", () => {
    const self = { accessToken: "at", page: 1, toJSON() { return this; } };
    expect(JSON.parse(JSON.stringify(withSecretsHidden({ self })))).toEqual({ self: { accessToken: "[hidden]", page: 1 } });
  });

  it("hides in a value whose toJSON returns that value by reference, not as this: the copy's toJSON would write the original", () => {
    const state: Record<string, unknown> = { refreshToken: "rt-LEAK-4", page: 1, toJSON: () => state };
    const line = JSON.stringify(withSecretsHidden({ state }));
    expect(line).not.toMatch(/LEAK/);
    expect(JSON.parse(line)).toEqual({ state: { refreshToken: "[hidden]", page: 1 } });
  });

  it("hides in the members of what a toJSON returns, which JSON writes without calling that one's own toJSON", () => {
    const reply = { toJSON: () => ({ accessToken: "at-LEAK-1", toJSON: () => ({ page: 1 }) }) };
    const line = JSON.stringify(withSecretsHidden({ reply }));
    expect(line).not.toMatch(/LEAK/);
    expect(JSON.parse(line)).toEqual({ reply: { accessToken: "[hidden]" } });
  });

  it("walks a value whose toJSON member is no function as JSON does, its members, rather than calling it", () => {
    const reply = { toJSON: "v2", accessToken: "at-LEAK-7" };
    expect(JSON.parse(JSON.stringify(withSecretsHidden({ reply })))).toEqual({ reply: { toJSON: "v2", accessToken: "[hidden]" } });
  });

  it("writes a class instance that a toJSON returned as its own members, not through its class's toJSON, which JSON does not call there", () => {
    class Inner {
      accessToken = "at-LEAK-8";
      toJSON() {
        return { shape: "inner" };
      }
    }
    const reply = { toJSON: () => new Inner() };
    expect(JSON.parse(JSON.stringify(withSecretsHidden({ reply })))).toEqual({ reply: { accessToken: "[hidden]" } });
  });

  it("hides in an array member whose toJSON writes a secret, and in one member of an array whose others it leaves", () => {
    const line = JSON.stringify(withSecretsHidden({ sessions: [new SessionReply("at-LEAK-5")], attempts: [{ status: 200 }, { access_token: "at-LEAK-6" }] }));
    expect(line).not.toMatch(/LEAK/);
    expect(JSON.parse(line)).toEqual({ sessions: [{ accessToken: "[hidden]", scope: "read" }], attempts: [{ status: 200 }, { access_token: "[hidden]" }] });
  });

  it("hides a URL's password where it stands, after the user name, even where the same text comes earlier in the URL", () => {
    const url = new URL("https://admin:admin@app.example/cb");
    expect(withSecretsHidden({ url })).toEqual({ url: "https://admin:[hidden]@app.example/cb" });
  });

  it("splits a query parameter at its first '=', so a value holding '=' (base64 padding) is hidden whole", () => {
    const url = new URL("https://app.example/cb?access_token=YXQ-LEAK-9=&code=c=LEAK-10&state=s1");
    expect(withSecretsHidden({ url })).toEqual({ url: "https://app.example/cb?access_token=[hidden]&code=[hidden]&state=s1" });
  });

  it("still hides the value of a query parameter whose name does not decode but reads as a secret's", () => {
    const url = new URL("https://app.example/cb?refresh_token%E0=rt-LEAK-11&state=s1");
    expect(withSecretsHidden({ url })).toEqual({ url: "https://app.example/cb?refresh_token%E0=[hidden]&state=s1" });
  });

  it("leaves a query parameter without '=' as it is, whatever its name, and the URL itself where nothing changed", () => {
    const url = new URL("https://app.example/cb?tokens&state=s1");
    expect(withSecretsHidden(url)).toBe(url);
  });

  it("hides in a URL written inside a string, at any depth, keeping the text around it (the URL then written as its href)", () => {
    const hidden = withSecretsHidden({
      note: "redirected to https://App.Example/cb?code=c-LEAK-12&state=s1, then back",
      tried: ["http://user:pw-LEAK-13@localhost:8080/oauth/token (refused)", "ftp://files.example/a?refresh_token=rt-LEAK-14&x=1"],
    });
    expect(hidden).toEqual({
      note: "redirected to https://app.example/cb?code=[hidden]&state=s1, then back",
      tried: ["http://user:[hidden]@localhost:8080/oauth/token (refused)", "ftp://files.example/a?refresh_token=[hidden]&x=1"],
    });
    expect(withSecretsHidden("https://app.example/cb#access_token=at-LEAK-15")).toBe("https://app.example/cb#access_token=[hidden]");
  });

  it("leaves a string whose URLs hide nothing as it is, the URL's spelling too, and text that only looks like one", () => {
    const values = ["see HTTPS://App.Example/%7Euser?state=s1 and https://x.example/?statusCode=502", "a://", "no url ://here?code=1", "https://[bad/?code=c1"];
    for (const value of values) expect(withSecretsHidden({ value })).toEqual({ value });
    const record = { value: values[0] };
    expect(withSecretsHidden(record)).toBe(record);
  });

  it("reads a percent-encoded query parameter's name as it reads decoded, and leaves one that does not decode as it is", () => {
    const url = new URL("https://app.example/cb?%63ode=c-LEAK-2&refresh_tok%65n=rt-LEAK-3&bad%E0=x&state=s1");
    expect(withSecretsHidden({ url })).toEqual({ url: "https://app.example/cb?%63ode=[hidden]&refresh_tok%65n=[hidden]&bad%E0=x&state=s1" });
  });
});
