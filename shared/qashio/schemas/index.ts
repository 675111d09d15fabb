/**
 * Zod schemas of the provider API (spec §2, §4, §7, §8): resources, envelopes,
 * pagination shapes, drift-tolerant enums, and query/body checks.
 */
export * from "./drift.js";
export * from "./enums.js";
export * from "./primitives.js";
export * from "./pagination.js";
export * from "./transaction.js";
export * from "./erp-card.js";
export * from "./core-card.js";
export * from "./pool-account.js";
export { masterDataShape } from "./master-data.js";
export * from "./bank-account.js";
export * from "./chart-of-account.js";
export * from "./tax-rate.js";
export * from "./supplier.js";
export * from "./statement.js";
export * from "./token-set.js";
export * from "./card-balance.js";
export * from "./invitation.js";
export * from "./company-summary.js";
export * from "./envelope.js";
export * from "./queries.js";
