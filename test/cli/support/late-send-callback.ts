/**
 * Preloaded (`--import`) into a bench child by test/cli/bench-children.test.ts: the callback of each IPC send runs
 * once the channel has closed, as it does when the bench disconnects the moment the child's answer reaches it.
 */
const send = process.send!.bind(process);
process.send = ((message: unknown, ...rest: unknown[]) => {
  const callback = rest.find((arg) => typeof arg === "function") as ((error: Error | null) => void) | undefined;
  return send(message, (error: Error | null) => {
    if (process.connected) process.once("disconnect", () => callback?.(error));
    else callback?.(error);
  });
}) as typeof process.send;
