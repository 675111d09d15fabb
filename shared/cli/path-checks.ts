/**
 * File system checks of the path settings, before any provider call: each returns what is wrong with a path, worded
 * as a setting's problem, or undefined. shared/cli/config.ts names the setting.
 */
import { accessSync, closeSync, constants, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmdirSync, statSync, type Stats } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileKindOf, removeStaleTempsSync, TEMP_SUFFIX, tempNameFor, unlinkQuietly } from "../local/atomic.js";
import { isLeaseFile } from "../local/file-lock.js";
import { STATE_DIRS, STATE_FILES } from "../local/layout.js";
import { isSnapshotStoreEntry } from "../local/snapshot-store.js";
import { tokenSetOf } from "../local/token-store.js";
import { printable } from "./terminal-text.js";
import { deniedProblem, looseAccessProblem, modeCheckingUid, ownersChmod, shellWord, uncheckedProblem, withDeniedAccess, type LooseAccessWording, type Need } from "./access-advice.js";

/** The path's stats, or undefined when it does not exist; other errors (EACCES, ELOOP) throw. */
export function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw error;
  }
}

/** The error access(2) answers for `mode` on `path`, or undefined when this process has that access. */
function accessRefusal(path: string, mode: number): NodeJS.ErrnoException | undefined {
  try {
    accessSync(path, mode);
    return undefined;
  } catch (error) {
    return error as NodeJS.ErrnoException;
  }
}

/**
 * Why this process lacks `mode` access to `path`, a path of the bridge's own (a state entry, the events file), read
 * and written by it alone, worded as a setting's problem, or undefined when it has it: the likely cause follows the
 * path, and an EACCES says what shuts this user out and the way in (see `deniedAccessOf` in access-advice.ts).
 */
function ownPathProblem(path: string, mode: number): string | undefined {
  return accessProblem(path, mode, "readable and writable", { hint: leftByAnotherUser, need: "read and write" });
}

/**
 * What access(2) refuses for `mode` on `path`, worded as a setting's problem (`what` it is not), or undefined. A
 * read-only mount and an immutable path are named as such (no user's rights open them); `own` adds the hint (made
 * only for a refused path) and the way in for a path of the bridge's own.
 */
function accessProblem(path: string, mode: number, what: string, own?: OwnPath): string | undefined {
  return refusalProblem(path, accessRefusal(path, mode)?.code, what, own);
}

/** What a path of the bridge's own adds to its refusal: the likely cause (asked only once refused) and the need. */
interface OwnPath {
  readonly hint?: (path: string) => string;
  readonly need: Need;
}

/** What a path is when access(2) refuses writing it EPERM: immutable (chattr +i), which no user's rights or mode open. */
const IMMUTABLE = "immutable (EPERM: no user may write it)";

/** The way to write `path` again when its `flag` (i: immutable, a: append-only) refuses it: no chmod opens it. */
function chattrFix(path: string, flag: "i" | "a" = "i"): string {
  const word = shellWord(path);
  return `clear its flag with \`sudo chattr -${flag} ${word}\` (\`lsattr -d ${word}\` shows it)`;
}

/**
 * What `file` is when it is append-only (chattr +a), which access(2) does not tell (appending is writing): no rename
 * may replace it. Linux refuses to open such a file for writing but appending (EPERM), so it is opened so and closed,
 * nothing written. Not a hard link (refused EPERM on a file system without hard links, vfat or exfat, as well). A file
 * this user may not write (EACCES: another's, not as root) tells nothing; Windows has no such flag.
 */
function appendOnlyProblem(file: string): string | undefined {
  if (modeCheckingUid() === undefined) return undefined;
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "EPERM" ? `is append-only (EPERM: no rename may replace it): ${file}; ${chattrFix(file, "a")}` : undefined;
  }
  closeSync(fd);
  return undefined;
}

/** {@link refusalProblem}'s words for `path` when it is immutable (access(2) refuses writing it EPERM); else undefined. */
function immutableProblem(path: string): string | undefined {
  return accessRefusal(path, constants.W_OK)?.code === "EPERM" ? refusalProblem(path, "EPERM", "writable") : undefined;
}

/** {@link accessProblem} for the `code` access(2) already answered for `path` (undefined: no refusal). */
function refusalProblem(path: string, code: string | undefined, what: string, own?: OwnPath): string | undefined {
  if (code === undefined) return undefined;
  // Not the user's rights: nobody writes there until it is mounted read-write.
  if (code === "EROFS") return `is on a read-only file system (EROFS): ${path}`;
  if (code === "EPERM") return `is ${IMMUTABLE}: ${path}; ${chattrFix(path)}, or use another path`;
  const problem = `is not ${what} by this user (${code}): ${path}${own?.hint?.(path) ?? ""}`;
  return own === undefined ? problem : withDeniedAccess(problem, path, code, own.need);
}

/**
 * What stops directory `dir`, which does not exist, from being created, worded as a setting's problem, if anything.
 * The first missing level below the nearest existing ancestor is made and removed again, as guessing misses cases:
 * permissions, a read-only mount, a pseudo filesystem (under /proc mkdir answers ENOENT, and Node's recursive mkdir
 * then loops forever, deaf to Ctrl-C).
 */
function creationProblem(dir: string): string | undefined {
  let child = dir;
  let parent = dirname(dir);
  for (;;) {
    const stats = statOf(parent);
    if (stats !== undefined && !stats.isDirectory()) return `cannot be created: ${parent} is a file, not a directory`;
    if (stats !== undefined) break;
    if (dirname(parent) === parent) return undefined;
    child = parent;
    parent = dirname(parent);
  }
  try {
    mkdirSync(child, { mode: 0o700 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "error";
    // EEXIST for a path stat found missing: a symbolic link to nothing (an unmounted volume, say).
    if (code === "EEXIST" && statOf(child) === undefined) return `cannot be created: ${child} is a link to a missing target`;
    return code === "EEXIST" ? undefined : `cannot be created: ${child} cannot be made in ${parent} (${code})`;
  }
  try {
    rmdirSync(child);
  } catch {
    // Another process filled it meanwhile: it exists, as the bridge needs.
  }
  return undefined;
}

/** What is wrong with the state directory: a file, not writable, not creatable, or an entry in it (see below). */
export function stateDirProblem(stateDir: string): string | undefined {
  const state = statOf(stateDir);
  if (state === undefined) return creationProblem(stateDir);
  if (!state.isDirectory()) return `must be a directory, but ${stateDir} is a file`;
  // The bridge's own directory, so the way in is named (chmod, or chown for another owner's), as for its entries; no
  // guess at a run under sudo, which the way in tells apart from a mode of the user's own.
  const shut = accessProblem(stateDir, constants.W_OK | constants.X_OK, "writable", { need: "read and write" });
  return shut ?? stateEntriesProblem(stateDir);
}

/** Entries of the state directory's listing named in {@link foreignStateDirProblem}; the rest are counted. */
const ENTRIES_NAMED = 3;

/**
 * Entries that say nothing of whose a directory is, so an otherwise empty one holding them is still empty: made by a
 * file system (`lost+found`, at a volume's root), by a file manager merely opening it (`.DS_Store`, `.localized` of
 * macOS Finder; `Thumbs.db`, `desktop.ini` of Windows Explorer), or put there to keep an empty directory in a
 * repository (`.gitkeep`, `.keep`, `.gitignore`). Any other dotfile is someone's: a `.git`, an `.env`, an `.ssh` make
 * a project or a home directory.
 */
const PLACEHOLDERS: ReadonlySet<string> = new Set(["lost+found", ".DS_Store", ".localized", "Thumbs.db", "desktop.ini", ".gitkeep", ".keep", ".gitignore"]);

/** Prefix of an AppleDouble file: where macOS keeps a file's Finder data beside it on a volume without extended attributes (FAT, exFAT, SMB). */
const APPLE_DOUBLE = "._";

/** Whether `name` is one of the {@link PLACEHOLDERS}, or the AppleDouble twin of one (`._.DS_Store`); the twin of any other file is as much someone's as that file. */
function isPlaceholder(name: string): boolean {
  return PLACEHOLDERS.has(name) || (name.startsWith(APPLE_DOUBLE) && PLACEHOLDERS.has(name.slice(APPLE_DOUBLE.length)));
}

/**
 * What makes an existing directory no state directory to take, if anything: it holds no state of the bridge's (see
 * {@link holdsBridgeState}) but entries of someone else's (`.`, a home or project directory, a photo folder with a
 * `snapshots/` of its own). Taking it, the bridge would write its tokens and binding among them and chmod it 0700.
 * Harmless, and no reason to refuse: the {@link PLACEHOLDERS} (`lost+found`, `.DS_Store`, `Thumbs.db`, `.gitkeep`, their
 * AppleDouble twins; not any other dotfile), the bridge's own temp files, the bridge's directories holding nothing but placeholders, its leases and temp
 * files (a first run of an older version, stopped before its first token save), and the events file when `eventsFile`
 * lies in it (with its rotations and `.cut-` recovery files: names it starts), or the directory it lies in there. A
 * directory that does not exist, or is empty, is undefined.
 */
export function foreignStateDirProblem(stateDir: string, eventsFile?: string): string | undefined {
  if (statOf(stateDir)?.isDirectory() !== true || holdsBridgeState(stateDir)) return undefined;
  const events = eventsFile === undefined ? undefined : eventsEntryIn(stateDir, eventsFile);
  const inTheWay = readdirSync(stateDir)
    .filter(
      (name) =>
        !(
          isPlaceholder(name) ||
          isBridgeTemp(name) ||
          isBridgeDirWithoutState(stateDir, name) ||
          (events !== undefined && isEventsEntry(name, events))
        ),
    )
    .sort();
  if (inTheWay.length === 0) return undefined;
  const named = inTheWay.slice(0, ENTRIES_NAMED).map(printable).join(", ");
  const rest = inTheWay.length - ENTRIES_NAMED;
  return (
    `${stateDir} is not a state directory of the bridge (it holds no ${STATE_FILES.binding}, no token set in ${STATE_FILES.tokens} and no snapshot store in ` +
    `${STATE_DIRS.snapshots}) but holds ${named}${rest > 0 ? ` and ${rest} more` : ""}: the bridge would write its state among them and make the directory ` +
    "private (mode 0700), so it will not use it; point BRIDGE_STATE_DIR at an empty or new directory, or at the one the bridge used before"
  );
}

/** Largest tokens.json read to tell the bridge's token set from another's file of that name: a token set takes a few KiB. */
const TOKEN_FILE_MAX_BYTES = 64 * 1024;

/**
 * Whether `stateDir` holds state of the bridge's, by what each version writes on first use and keeps: `binding.json`
 * (every version since bindings writes it before anything else), a token set in `tokens.json` (every version; those
 * before bindings wrote no `binding.json`), or the snapshot store's id file or a segment in `snapshots/` (segments by
 * every version, the id file since cursors were bound to their store). Names alone are not enough: a project's
 * design `tokens.json` or a photo folder's `snapshots/` is no state. A marker that cannot be read counts: the entries
 * check (stateEntriesProblem) names what is wrong with it.
 */
function holdsBridgeState(stateDir: string): boolean {
  if (statOf(join(stateDir, STATE_FILES.binding)) !== undefined || holdsTokenSet(join(stateDir, STATE_FILES.tokens))) return true;
  const snapshots = listingOf(join(stateDir, STATE_DIRS.snapshots));
  return snapshots === "unreadable" || (snapshots?.some(isSnapshotStoreEntry) ?? false);
}

/**
 * Whether `file` holds a token set as the bridge writes it (see tokenSetOf), or cannot be read to tell: no regular
 * file (a directory, a pipe, which reading would block on), or unreadable, each of which the entries check refuses,
 * or no JSON at all (a token set torn or mistyped). JSON without a refresh token is another's.
 */
function holdsTokenSet(file: string): boolean {
  let text: string;
  try {
    const stats = statOf(file);
    if (stats === undefined || (stats.isFile() && stats.size > TOKEN_FILE_MAX_BYTES)) return false;
    if (!stats.isFile()) return true;
    text = readFileSync(file, "utf8");
  } catch {
    return true;
  }
  try {
    tokenSetOf(text, file);
    return true;
  } catch {
    // Not JSON at all: the bridge's own file torn or edited by hand (a design-token file is JSON), which the bind and
    // the token load then name; told "not a state directory", its owner would be sent elsewhere.
    return !isJson(text);
  }
}

/** Whether `text` parses as JSON. */
function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether entry `name` of a state directory without state is one of the bridge's directories holding nothing but what
 * the bridge puts there before any state: its leases (in `locks/`) and temp files, besides placeholders. One that
 * cannot be listed counts: the entries check names it. A file of that name, or one holding another's files, is in the way.
 */
function isBridgeDirWithoutState(stateDir: string, name: string): boolean {
  if (!(Object.values(STATE_DIRS) as readonly string[]).includes(name)) return false;
  const entries = listingOf(join(stateDir, name));
  if (entries === "unreadable") return true;
  return entries?.every((entry) => isPlaceholder(entry) || entry.endsWith(TEMP_SUFFIX) || (name === STATE_DIRS.locks && isLeaseFile(entry))) ?? false;
}

/** The entries of directory `dir`; undefined when there is none (missing, or no directory); "unreadable" when it cannot be listed. */
function listingOf(dir: string): readonly string[] | "unreadable" | undefined {
  try {
    return readdirSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "ENOENT" || code === "ENOTDIR" ? undefined : "unreadable";
  }
}

/** The events file's entry in `stateDir` (the file's name, or the directory it lies in there), by name or with links resolved; else undefined. */
function eventsEntryIn(stateDir: string, eventsFile: string): { readonly name: string; readonly file: boolean } | undefined {
  const pairs: readonly (readonly [string, string])[] = [[stateDir, eventsFile], [realPathOf(stateDir), realPathOf(eventsFile)]];
  for (const [state, events] of pairs) {
    if (events === state || !within(state, events)) continue;
    const [first = "", ...deeper] = relative(state, events).split(sep);
    return { name: first, file: deeper.length === 0 };
  }
  return undefined;
}

/** Whether `name` is the events file's entry, or (for the file itself) one of its rotations or recovery files. */
function isEventsEntry(name: string, events: { readonly name: string; readonly file: boolean }): boolean {
  if (name === events.name) return true;
  return events.file && name.startsWith(events.name) && (name[events.name.length] === "." || name[events.name.length] === "-");
}

/** Whether `name` is a temp file of a write of the bridge's into the state directory (interrupted: swept later). */
function isBridgeTemp(name: string): boolean {
  return name.endsWith(TEMP_SUFFIX) && Object.values(STATE_FILES).some((file) => name.startsWith(`${file}.`));
}

/**
 * What is wrong with the entries the bridge keeps in an existing state directory, if anything: one of the wrong kind,
 * or one this user cannot read and write (left by a run as another user, say under sudo). Found here, it is a
 * settings problem (exit 2) before any provider call, not a failure of every cycle.
 */
function stateEntriesProblem(stateDir: string): string | undefined {
  const entries = [
    ...Object.values(STATE_FILES).map((name) => ({ name, directory: false })),
    ...Object.values(STATE_DIRS).map((name) => ({ name, directory: true })),
  ];
  for (const { name, directory } of entries) {
    const path = join(stateDir, name);
    let stats: Stats | undefined;
    try {
      stats = statOf(path);
    } catch (error) {
      return uncheckedProblem(path, error);
    }
    if (stats === undefined) continue;
    if (stats.isDirectory() !== directory) return `${path} must be a ${directory ? "directory" : "file"}, but is ${directory ? "a file" : "a directory"}`;
    // A named pipe or a device passes as no directory, but reading it blocks (a pipe nothing writes to: for ever, deaf to
    // Ctrl-C) or yields no state; each run reads tokens.json and binding.json first.
    if (!directory && !stats.isFile()) return `${path} must be a regular file, but is ${fileKindOf(stats)}`;
    // Replaced by a rename (atomic write), a linked file became a file of its own here, its target left as it was: for
    // tokens.json, holding the refresh token the first refresh spent, which whatever reads it next presents again.
    const target = directory ? undefined : linkTargetOf(path);
    if (target !== undefined) {
      return (
        `${path} is a symbolic link (to ${target}): the bridge replaces this file by a rename, which puts a file in the link's ` +
        "place and leaves the target as it was; move the file into the state directory, or link the state directory itself"
      );
    }
    // Files are read, and replaced by a rename in the directory: reading is all they need, their own mode aside. Not
    // an immutable or append-only one (chattr +i, +a), which the rename may not replace either: a refresh's save would
    // fail then, after the provider rotated the refresh token (exit 3).
    const problem = directory
      ? (ownPathProblem(path, constants.R_OK | constants.W_OK | constants.X_OK) ??
        (name === STATE_DIRS.locks ? undefined : unreadableFileIn(path)))
      : (unreadableStateFileProblem(path) ?? immutableProblem(path) ?? appendOnlyProblem(path));
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * The likeliest cause of a state entry, or an events file, this user may not use, said right after its path: a run as
 * another user, such as under sudo. Not for a path this user owns, which no other user's run left so; empty then.
 */
function leftByAnotherUser(path: string): string {
  const uid = modeCheckingUid();
  let owner: number | undefined;
  try {
    owner = statSync(path).uid;
  } catch {
    // Not to be seen (a directory on the way shut): its owner is unknown, and the guess stays.
  }
  return uid !== undefined && owner === uid ? "" : " (left by a run as another user, such as under sudo?)";
}

/**
 * Why this user may not read `file` of the state directory, worded as the cycle's own read errors word it
 * ({@link unreadableProblem}: mode, owner and the fix) with {@link leftByAnotherUser}; undefined when it may.
 */
function unreadableStateFileProblem(file: string): string | undefined {
  const refusal = accessRefusal(file, constants.R_OK);
  return refusal === undefined ? undefined : deniedProblem(file, refusal, "read", leftByAnotherUser(file));
}

/**
 * What is wrong with the files in a snapshots or quarantine directory, if anything: one this user cannot read. A cycle
 * would otherwise fail on it after its provider calls, and name it corrupt ("move it aside") though its bytes are fine.
 * Leases are left out: one that cannot be read counts as expired.
 */
function unreadableFileIn(dir: string): string | undefined {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    return deniedProblem(dir, error, "checked", leftByAnotherUser(dir));
  }
  for (const name of names) {
    // A temporary file of an interrupted write is never read: it is swept.
    if (name.endsWith(TEMP_SUFFIX)) continue;
    const path = join(dir, name);
    if (statOf(path)?.isFile() !== true) continue;
    const problem = unreadableStateFileProblem(path);
    // Gone since the listing (a running loop compacted a segment or settled a record): nothing left to read.
    if (problem !== undefined && statOf(path) !== undefined) return problem;
  }
  return undefined;
}

/** The events file's wording: its group may keep reading it (a consumer's group, `chmod 640`), only writing goes. */
const EVENTS_FILE_WORDING: LooseAccessWording = {
  risk: "another local user could forge or delete the events consumers read, or read them all (cardholder data), so the bridge will not use it",
  chmod: "go-w",
  instead: "an events file of your own",
};

/**
 * What makes an existing state directory untrustworthy, if anything (see {@link looseAccessProblem}): the directory
 * itself, its files and directories (a restored backup may carry other modes than the 0700 and 0600 the bridge
 * gives them), and the files in snapshots/ and quarantine/. Parent directories are not checked: that would refuse
 * too many real setups (docs/spec-gaps.md). Skipped on Windows, and wherever the process has no user id, as modes
 * say nothing there. A path that cannot be read is left to {@link stateDirProblem}, which names it.
 */
export function stateDirAccessProblem(stateDir: string): string | undefined {
  const uid = modeCheckingUid();
  if (uid === undefined) return undefined;
  const statQuietly = (path: string): Stats | undefined => {
    try {
      return statOf(path);
    } catch {
      return undefined;
    }
  };
  const state = statQuietly(stateDir);
  if (state === undefined || !state.isDirectory()) return undefined;
  const own = looseAccessProblem(stateDir, state, uid, true);
  if (own !== undefined) return own;
  for (const name of [...Object.values(STATE_FILES), ...Object.values(STATE_DIRS)]) {
    const path = join(stateDir, name);
    const stats = statQuietly(path);
    if (stats === undefined) continue;
    const problem = looseAccessProblem(path, stats, uid, stats.isDirectory());
    if (problem !== undefined) return problem;
    // Leases are left out: a forged one only holds a cycle off, which the lease's expiry ends.
    if (!stats.isDirectory() || name === STATE_DIRS.locks) continue;
    let names: string[];
    try {
      names = readdirSync(path);
    } catch {
      continue;
    }
    for (const entry of names) {
      const file = join(path, entry);
      const fileStats = entry.endsWith(TEMP_SUFFIX) ? undefined : statQuietly(file);
      const fileProblem = fileStats?.isFile() === true ? looseAccessProblem(file, fileStats, uid, false) : undefined;
      if (fileProblem !== undefined) return fileProblem;
    }
  }
  return undefined;
}

/** What is wrong with the events file: a directory, not readable and writable, or not creatable. */
export function eventsFileProblem(eventsFile: string): string | undefined {
  // Every check, as a probe left behind is usually followed by the events file it probed for.
  sweepStaleProbes(eventsFile);
  const events = statOf(eventsFile);
  if (events !== undefined) {
    // A regular file: the publisher fsyncs it and cuts back a line torn by a crash, which /dev/null, a terminal or a
    // pipe refuse (every cycle would then fail after publishing, and nothing would be acknowledged).
    if (!events.isFile()) return `must be a regular file, but ${eventsFile} is ${fileKindOf(events)}`;
    const stream = outputStreamOf(events);
    if (stream !== undefined) {
      return (
        `is this command's own ${stream} (${eventsFile}): its lines would go in among the events, or over them where the ` +
        "output was not opened to append; name the file itself and send the output elsewhere"
      );
    }
    // Read too: the publisher opens it for appending and reads its last byte (to close a line torn by a crash). Its
    // directory need not be writable: only a power-loss cut writes there (what it cuts is saved beside the file
    // first), rare enough not to refuse such a setup; that append fails then, naming the problem (jsonl-publisher.ts).
    // Like the state directory's files, it is created by the bridge's first run: a run under sudo leaves it root's.
    return ownPathProblem(eventsFile, constants.R_OK | constants.W_OK);
  }
  const dir = dirname(eventsFile);
  const parent = statOf(dir);
  if (parent === undefined) return creationProblem(dir);
  if (!parent.isDirectory()) return `cannot be created: ${dir} is a file, not a directory`;
  // A symbolic link to a file not made yet: the first append creates its target, so the target's directory is the one
  // to write (the creation probe goes there too); the link's own, like an existing file's, need not be writable.
  if (linkTargetOf(eventsFile) !== undefined) return danglingLinkProblem(eventsFile);
  return eventsDirProblem(dir, parent) ?? fileCreationProblem(eventsFile);
}

/**
 * What stops an events file not made yet from being created in existing directory `dir` (its own, or its symbolic
 * link's target's; `stats` its stats), worded as the setting's problem, or undefined. Said of the directory, not of
 * the file the setting names; another user's directory has its rights for its owner to give (a shared log directory is
 * no place for a chown), so the fix is another path; this user's own, shut by its own mode (EACCES), a chmod opens
 * too. EPERM: an immutable directory (chattr +i), which no chmod opens: named so, with the chattr that clears it.
 */
function eventsDirProblem(dir: string, stats: Stats): string | undefined {
  const refused = accessRefusal(dir, constants.W_OK | constants.X_OK)?.code;
  const elsewhere = "point BRIDGE_EVENTS_FILE into a directory this user may write";
  if (refused === "EPERM") return `cannot be created: its directory ${dir} is ${IMMUTABLE}; ${chattrFix(dir)}, or ${elsewhere}`;
  if (refused === "EACCES") {
    const chmod = ownersChmod(dir, stats, "rwx");
    return `cannot be created: this user may not write its directory ${dir} (EACCES); ${chmod === undefined ? "" : `${chmod}, or `}${elsewhere}`;
  }
  return refusalProblem(dir, refused, "writable");
}

/**
 * What stops the first append through `eventsFile`, a symbolic link to a file not made yet, from creating its target:
 * the publisher makes the directories of the setting's own path, not the link's target's, so a target in a directory
 * that does not exist failed every cycle's publish (ENOENT), nothing acknowledged, until someone made it. The target's
 * directory is then checked as a new file's own is.
 */
function danglingLinkProblem(eventsFile: string): string | undefined {
  const target = realPathOf(eventsFile);
  const dir = dirname(target);
  const stats = statOf(dir);
  if (stats === undefined) {
    return `is a symbolic link to ${target}, whose directory ${dir} does not exist (the bridge makes the directories of the setting's own path only): create it, or set the file's own path`;
  }
  if (!stats.isDirectory()) return `cannot be created: ${dir} (where its symbolic link points) is a file, not a directory`;
  return eventsDirProblem(dir, stats) ?? fileCreationProblem(target);
}

/**
 * What makes an existing events file (a link followed) untrustworthy, if anything (see {@link looseAccessProblem}):
 * another user owns it (root aside), or its group or others may write it. They could forge or delete the lines
 * consumers act on, and its owner reads every event. Its group may read it (a consumer's group: `chmod 640`). Its
 * directory is not checked, as the state directory's parents are not; a file the bridge creates is 0600. Skipped on
 * Windows and without a user id; a path that cannot be stat'ed, or no regular file, is left to {@link eventsFileProblem}.
 */
export function eventsFileAccessProblem(eventsFile: string): string | undefined {
  const uid = modeCheckingUid();
  if (uid === undefined) return undefined;
  let events: Stats | undefined;
  try {
    events = statOf(eventsFile);
  } catch {
    return undefined;
  }
  return events?.isFile() === true ? looseAccessProblem(eventsFile, events, uid, false, EVENTS_FILE_WORDING) : undefined;
}

/**
 * Which of this process's standard streams `stats` is the file of, if any: `/dev/stdout` with the output redirected to
 * a file, or a redirect to the events file itself. Compared by device and inode; a closed stream is none.
 */
function outputStreamOf(stats: Stats): string | undefined {
  for (const [fd, stream] of [[1, "standard output"], [2, "standard error"]] as const) {
    try {
      const output = fstatSync(fd);
      if (output.dev === stats.dev && output.ino === stats.ino) return stream;
    } catch {
      // Closed: nothing is written there.
    }
  }
  return undefined;
}

/**
 * What stops `file`, which does not exist in a writable directory, from being created, if anything, since a
 * directory's permissions do not tell (a pseudo filesystem such as /proc refuses). A probe of its own name is created
 * and removed beside it: never the file itself, which a running bridge may create and fill meanwhile.
 */
function fileCreationProblem(file: string): string | undefined {
  const probe = tempNameFor(file);
  const refusal = (error: unknown): string => `cannot be created (${(error as NodeJS.ErrnoException).code ?? "error"}): ${file}`;
  let fd: number;
  try {
    fd = openSync(probe, "wx", 0o600);
  } catch (error) {
    return refusal(error);
  }
  try {
    // A close may report an error the mount deferred (NFS): the file could not be created after all.
    closeSync(fd);
  } catch (error) {
    return refusal(error);
  } finally {
    // One that cannot be removed now is a later check's to sweep (see sweepStaleProbes).
    unlinkQuietly(probe);
  }
  return undefined;
}

/**
 * Removes the probes of `eventsFile` (see fileCreationProblem) that an earlier check could not remove. They carry the
 * temp suffix of a write of the events file itself, which nothing else makes: the publisher appends. Only stale ones,
 * as a young one may be another check's in flight; the directory's other files are left alone, as it may hold anything.
 */
function sweepStaleProbes(eventsFile: string): void {
  // A symbolic link's probe is made beside its target (danglingLinkProblem), so its leftovers are swept there too.
  const files = linkTargetOf(eventsFile) === undefined ? [eventsFile] : [eventsFile, realPathOf(eventsFile)];
  for (const file of files) {
    const name = basename(file);
    removeStaleTempsSync(dirname(file), { of: (target) => target === name });
  }
}

/** Whether `path` is `dir` or lies under it (by name: symbolic links are not followed). */
export function within(dir: string, path: string): boolean {
  const rest = relative(dir, path);
  return rest === "" || !(rest === ".." || rest.startsWith(`..${sep}`) || isAbsolute(rest));
}

/** Links followed at most while resolving a path's dangling links, as the kernel's own limit (ELOOP past it). */
const MAX_LINKS = 40;

/**
 * The target of `path` when it is a symbolic link, resolved against the directory it really lies in (links on the way
 * resolved, as the kernel follows a relative target: `..` from /home/u, a link to /data/u, is /data); else undefined.
 */
function linkTargetOf(path: string): string | undefined {
  try {
    const target = readlinkSync(path);
    return resolve(realpathSync(dirname(path)), target);
  } catch {
    return undefined;
  }
}

/**
 * `path` with the symbolic links on its way resolved: those of its nearest existing ancestor (the rest does not exist
 * yet), and a link to a target not made yet followed to that target, as an open with O_CREAT follows it (a link to a
 * state directory's tokens.json before the first token save); `path` itself when even that cannot be resolved.
 */
export function realPathOf(path: string, links = 0): string {
  const rest: string[] = [];
  for (let existing = path; ; existing = dirname(existing)) {
    try {
      return join(realpathSync(existing), ...rest.reverse());
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if ((code !== "ENOENT" && code !== "ENOTDIR") || dirname(existing) === existing) return path;
    }
    const target = links < MAX_LINKS ? linkTargetOf(existing) : undefined;
    if (target !== undefined) return realPathOf(join(target, ...rest.reverse()), links + 1);
    rest.push(basename(existing));
  }
}

/**
 * Whether the events file is the state directory or one of its entries: appending to tokens.json destroyed the
 * tokens. A file of its own beside them (`<state>/events.jsonl`) is fine. By name, and again with symbolic links
 * resolved: a link to tokens.json is appended to just the same.
 */
export function eventsFileTakesState(stateDir: string, eventsFile: string): boolean {
  const takes = (state: string, events: string): boolean =>
    events === state ||
    Object.values(STATE_FILES).some((name) => events === join(state, name)) ||
    Object.values(STATE_DIRS).some((name) => within(join(state, name), events));
  return takes(stateDir, eventsFile) || takes(realPathOf(stateDir), realPathOf(eventsFile));
}

/**
 * Whether the state directory is the events file or lies under it: creating the state directory would make the events
 * file's path a directory, and the first cycle would then fail to publish into it.
 */
export function stateDirUnderEventsFile(stateDir: string, eventsFile: string): boolean {
  return within(eventsFile, stateDir);
}
