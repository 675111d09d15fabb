/**
 * Why a local listener could not take the port it was asked for, when another `--port` is the fix: a usage problem
 * (exit 2) of `authorize --port` and of `npm run sandbox -- --port`, not a failure of what they were to do.
 */

/**
 * The reason and the fix for a listen that failed on the port asked for (in use, or not this user's to take), else
 * undefined (any other failure, not mended by another port).
 *
 * @example
 * portRefusal(Object.assign(new Error("listen EADDRINUSE"), { code: "EADDRINUSE" }), 8787);
 * // "the port is in use; pass another --port, or --port 0 for any free one"
 */
export function portRefusal(error: unknown, port: number): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const why =
    code === "EADDRINUSE"
      ? "the port is in use"
      : code === "EACCES"
        ? `this user may not listen on that port${port > 0 && port < 1024 ? " (ports below 1024 need root on most systems)" : ""}`
        : undefined;
  return why === undefined ? undefined : `${why}; pass another --port, or --port 0 for any free one`;
}
