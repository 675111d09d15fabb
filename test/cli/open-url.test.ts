import { describe, expect, it } from "vitest";
import { openerCommand } from "../../shared/cli/open-url.js";

const URL_WITH_QUERY = "http://127.0.0.1:4711/oauth2/authorize?response_type=code&client_id=c&scope=a%20b&state=x^y";

describe("openerCommand", () => {
  it("escapes cmd's & and ^ on Windows and passes the arguments verbatim, so start gets the whole URL", () => {
    const { command, args, verbatim } = openerCommand(URL_WITH_QUERY, "win32");
    expect(command).toBe("cmd");
    expect(verbatim).toBe(true);
    expect(args).toEqual([
      "/d",
      "/s",
      "/c",
      "start",
      '""',
      "http://127.0.0.1:4711/oauth2/authorize?response_type=code^&client_id=c^&scope=a%20b^&state=x^^y",
    ]);
    // What cmd runs after removing its escapes is the URL itself.
    expect((args.at(-1) as string).replace(/\^(.)/g, "$1")).toBe(URL_WITH_QUERY);
  });

  it.each([
    ["darwin", "open"],
    ["linux", "xdg-open"],
  ] as const)("hands the URL unchanged to the %s opener", (platform, command) => {
    expect(openerCommand(URL_WITH_QUERY, platform)).toEqual({ command, args: [URL_WITH_QUERY], verbatim: false });
  });
});
