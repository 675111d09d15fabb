/**
 * Tries to open a URL in the person's browser. Failure is ignored: the URL is printed anyway.
 */
import { spawn } from "node:child_process";

/** The platform's opener command for `url`: its program, arguments and whether they go to it verbatim (Windows). */
export interface OpenerCommand {
  readonly command: string;
  readonly args: readonly string[];
  readonly verbatim: boolean;
}

/**
 * Builds the opener command. On Windows `start` runs inside cmd, where `&` (in every authorize URL) ends the command:
 * cmd's metacharacters are escaped with `^` and passed verbatim, so Node's own quoting cannot undo the escapes.
 *
 * @example
 * openerCommand("https://a.test/?x=1&y=2", "win32"); // { command: "cmd", args: ["/d", "/s", "/c", "start", '""', "https://a.test/?x=1^&y=2"], verbatim: true }
 */
export function openerCommand(url: string, platform: NodeJS.Platform): OpenerCommand {
  if (platform === "darwin") return { command: "open", args: [url], verbatim: false };
  if (platform === "win32") {
    return { command: "cmd", args: ["/d", "/s", "/c", "start", '""', url.replace(/[&|<>^()]/g, "^$&")], verbatim: true };
  }
  return { command: "xdg-open", args: [url], verbatim: false };
}

/** Variables the browser never gets: the bridge's settings (client secret, refresh token) and AWS credentials. */
const WITHHELD_FROM_BROWSER = /^(?:QASHIO_|BRIDGE_|AWS_)/i;

/**
 * The environment for the browser: this process's without {@link WITHHELD_FROM_BROWSER}. The opener may start a
 * browser that outlives the command by days; exported secrets have no business there.
 *
 * @example
 * browserEnvironment({ PATH: "/usr/bin", QASHIO_CLIENT_SECRET: "s" }); // { PATH: "/usr/bin" }
 */
export function browserEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !WITHHELD_FROM_BROWSER.test(name)));
}

/** Opens `url` with the platform's opener (xdg-open, open, start); resolves true when one was spawned. */
export function openInBrowser(url: string, platform: NodeJS.Platform = process.platform): Promise<boolean> {
  const { command, args, verbatim } = openerCommand(url, platform);
  return new Promise((resolve) => {
    try {
      const child = spawn(command, args, { stdio: "ignore", detached: true, windowsVerbatimArguments: verbatim, env: browserEnvironment(process.env) });
      child.once("error", () => resolve(false));
      child.once("spawn", () => {
        child.unref();
        resolve(true);
      });
    } catch {
      resolve(false);
    }
  });
}
