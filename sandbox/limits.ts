/**
 * Bounds of the sandbox's control surface, in a module without dependencies: the bench's argument parser checks
 * against them before anything is loaded.
 */

/** Largest backlog a reset builds. */
export const MAX_RESET_TRANSACTIONS = 200_000;
