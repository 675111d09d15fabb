/**
 * Access advice: what shuts this user out of a path and the way in (the closed directory on the way, or the path's own
 * mode and owner, with the chmod or chown that opens it), and why a path others may write cannot hold the bridge's
 * state. Modes are reported, never changed: the operator decides.
 */
import { accessSync, constants, statSync, type Stats } from "node:fs";
import { dirname, resolve } from "node:path";

/** What {@link looseAccessProblem} reads of a path's stats: its type and permission bits, and its owner. */
export type OwnerAndMode = Pick<Stats, "mode" | "uid">;

/** Permission bits as `ls` and `chmod` write them: four octal digits. */
export function octal(mode: number): string {
  return mode.toString(8).padStart(4, "0");
}

/**
 * The problem of a path this user could not check (a stat or a listing refused with `error`'s code). For EACCES it
 * names the directory on the way that this user may not enter and the way in: "cannot be checked" alone leaves the
 * person to guess which level of the path shuts them out.
 *
 * @example
 * uncheckedProblem("/root/state", eacces); // "cannot be checked by this user (EACCES): /root/state: this user may not enter /root (mode 0700, owned by uid 0); ..."
 */
export function uncheckedProblem(path: string, error: unknown): string {
  return deniedProblem(path, error, "checked");
}

/**
 * As {@link uncheckedProblem}, for a file this user could not read (`error`'s code): for EACCES, the directory on the
 * way this user may not enter, else the file itself, with its mode and owner and the way in. Not a corrupt file: its
 * bytes may be fine, and moving it aside would lose them.
 *
 * @example
 * unreadableProblem("/state/snapshots/seg-….log", eacces); // "cannot be read by this user (EACCES): /state/…: this user may not read /state/… (mode 0600, owned by uid 0); ..."
 */
export function unreadableProblem(file: string, error: unknown): string {
  return deniedProblem(file, error, "read");
}

/**
 * "cannot be <verb> by this user (<code>): <path>", `hint` (a likely cause) right after the path, and for EACCES what
 * shuts this user out (see {@link deniedAccessOf}); for a fault of the path itself (a link loop, a name too long),
 * "cannot be <verb> (<code>: <what it means>): <path>".
 */
export function deniedProblem(path: string, error: unknown, verb: "checked" | "read", hint = ""): string {
  const code = (error as NodeJS.ErrnoException).code ?? "error";
  const fault = PATH_FAULTS[code];
  if (fault !== undefined) return `cannot be ${verb} (${code}: ${fault}): ${path}${hint}`;
  return withDeniedAccess(`cannot be ${verb} by this user (${code}): ${path}${hint}`, path, code, "read");
}

/**
 * Codes that are faults of the path itself, which no user could check or read either: said as such, since "by this
 * user" would send the person after permissions.
 */
const PATH_FAULTS: Readonly<Record<string, string>> = {
  ELOOP: "a symbolic link on the way leads back to itself, or too many links are chained",
  ENAMETOOLONG: "the path, or a name in it, is longer than the file system takes",
};

/** `problem`, refused `code` on `path`, followed for EACCES by what shuts this user out and the way in to `need` it (see {@link deniedAccessOf}). */
export function withDeniedAccess(problem: string, path: string, code: string, need: Need): string {
  const denied = code === "EACCES" ? deniedAccessOf(path, need) : undefined;
  return denied === undefined ? problem : `${problem}: ${denied}`;
}

/** What this user needs of a file: a state file is only read (it is replaced by a rename), the events file read and appended to. A directory needs all of rwx. */
export type Need = "read" | "read and write";

/**
 * What shuts this user out of `path`, which refused it EACCES, and the way in: the first directory on the way it may
 * not enter, else the path itself (its permission bits are all that is left to refuse it), which this user is to
 * `need` (a directory: to read and write, and the chmod gives all of rwx, as a directory needs to be listed and
 * entered too); undefined when neither can be stat'ed. Modes are reported, never changed.
 *
 * @example
 * deniedAccessOf("/root/.env"); // "this user may not enter /root (mode 0700, owned by uid 0); use a path this user may enter, or run as its owner"
 * deniedAccessOf("/state/snapshots"); // "this user may not read and write /state/snapshots (mode 0755, owned by uid 0); run as its owner, or give it to this user (`sudo chown -R 1000 /state/snapshots`)"
 */
export function deniedAccessOf(path: string, need: Need = "read"): string | undefined {
  const closed = closedDirectoryOn(path);
  if (closed !== undefined) {
    const way = ownersChmod(closed.dir, closed.stats, "rwx") ?? "use a path this user may enter, or run as its owner";
    return `this user may not enter ${closed.dir} (${modeAndOwner(closed.stats)}); ${way}`;
  }
  let stats: Stats;
  try {
    stats = statSync(path);
  } catch {
    return undefined;
  }
  const word = shellWord(path);
  const directory = stats.isDirectory();
  const bits = directory ? "rwx" : need === "read" ? "r" : "rw";
  const way =
    ownersChmod(path, stats, bits) ??
    `run as its owner, or give it to this user (\`sudo chown ${directory ? "-R " : ""}${modeCheckingUid() ?? "$(id -u)"} ${word}\`)`;
  return `this user may not ${directory ? "read and write" : need} ${path} (${modeAndOwner(stats)}); ${way}`;
}

/**
 * The way in to `path` when this user owns it (`stats`) and its own mode shuts this user out: the chmod giving the
 * owner `bits` (a directory needs all of rwx, to be listed, entered and written); undefined for another user's path,
 * whose rights are its owner's to give.
 *
 * @example
 * ownersChmod("/srv/logs", stats, "rwx"); // "run `chmod u+rwx /srv/logs`"
 */
export function ownersChmod(path: string, stats: OwnerAndMode, bits: "r" | "rw" | "rwx"): string | undefined {
  return ownedByThisUser(stats) ? `run \`chmod u+${bits} ${shellWord(path)}\`` : undefined;
}

/** Whether this process's user owns what `stats` describe: the effective uid, which permission checks use (as {@link modeCheckingUid}). */
function ownedByThisUser(stats: OwnerAndMode): boolean {
  return stats.uid === modeCheckingUid();
}

/** "mode 0700", with ", owned by uid N" when another user owns it. */
function modeAndOwner(stats: OwnerAndMode): string {
  return `mode ${octal(stats.mode & 0o7777)}${ownedByThisUser(stats) ? "" : `, owned by uid ${stats.uid}`}`;
}

/** The first directory from the root down to `path` (itself included) that this user may not enter, if any. */
function closedDirectoryOn(path: string): { readonly dir: string; readonly stats: Stats } | undefined {
  const levels: string[] = [];
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    levels.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of levels) {
    let stats: Stats;
    try {
      stats = statSync(dir);
    } catch {
      // Gone, or a loop: for the caller's own message. (Levels below a closed one are never reached.)
      return undefined;
    }
    if (!stats.isDirectory()) return undefined;
    try {
      accessSync(dir, constants.X_OK);
    } catch {
      return { dir, stats };
    }
  }
  return undefined;
}

/** `text` as one word of a POSIX shell: single-quoted, each `'` closed, escaped and reopened. */
export function shellQuoted(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** `text` as one word of a POSIX shell: as is when nothing in it is special, else {@link shellQuoted}. */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : shellQuoted(text);
}

/** How {@link looseAccessProblem} words a path that is not the state directory's: what is at risk, the fix for a mode others may write, what to use instead. */
export interface LooseAccessWording {
  readonly risk: string;
  readonly chmod: string;
  readonly instead: string;
}

/**
 * Why `path`, a directory (or a file) of the state directory, cannot be trusted with the bridge's state, worded as a
 * setting's problem with the fix, or undefined: writable by its group or by others (a sticky bit does not help: others
 * may still create the entries it lacks), or owned by a user other than `uid` and root. Root is trusted as ssh trusts
 * it: it may replace any file anyway, and a file left by a run under sudo is reported, when it matters, as unreadable.
 * Modes are reported, never changed: the operator decides. `wording` words it for another path (the events file).
 */
export function looseAccessProblem(path: string, stats: OwnerAndMode, uid: number, directory: boolean, wording?: LooseAccessWording): string | undefined {
  const foreign = stats.uid !== uid && stats.uid !== 0;
  const writable = stats.mode & 0o022;
  if (!foreign && writable === 0) return undefined;
  const faults: string[] = [];
  if (foreign) faults.push(`is owned by uid ${stats.uid}, not by you (uid ${uid})`);
  if (writable !== 0) {
    const by = writable === 0o022 ? "its group and others" : writable === 0o002 ? "others" : "its group";
    const sticky = directory && (stats.mode & 0o1000) !== 0 ? "; the sticky bit still lets them create files in it" : "";
    faults.push(`is writable by ${by} (mode ${octal(stats.mode & 0o7777)}${sticky})`);
  }
  const word = shellWord(path);
  const fixes = [
    ...(foreign ? [`sudo chown ${directory ? "-R " : ""}${uid} ${word}`] : []),
    ...(writable !== 0 ? [`chmod ${wording?.chmod ?? (directory ? 700 : 600)} ${word}`] : []),
  ];
  const risk =
    wording?.risk ??
    (directory
      ? "another local user could replace the tokens, binding or snapshots there, so the bridge will not use it"
      : "another local user could rewrite it, so the bridge will not use it");
  return `${faults.join(" and ")}: ${path}; ${risk}: run \`${fixes.join(" && ")}\`${foreign ? ` (or use ${wording?.instead ?? "a state directory of your own"})` : ""}`;
}

/** This process's user id, for the checks of modes and owners; undefined on Windows and wherever there is none, as modes say nothing there. */
export function modeCheckingUid(): number | undefined {
  if (process.platform === "win32" || typeof process.geteuid !== "function") return undefined;
  return process.geteuid();
}
