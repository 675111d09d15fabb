/**
 * Defaults of a tenant's optional fields, its webhooks' among them: apart from both schemas, which apply them.
 */
import { DEFAULT_SOURCE } from "../shared/bridge/deps.js";

/** Defaults of optional tenant fields, named so docs and tests can refer to them. */
export const TENANT_DEFAULTS = {
  eventSource: DEFAULT_SOURCE,
  piiMode: "redact",
  emitCardCreated: false,
  cardDetails: false,
  schedulesEnabled: true,
  transactionsEveryMinutes: 5,
  cardsEveryMinutes: 15,
  archiveRetentionDays: 30,
  syncLagThresholdSeconds: 1800,
  webhookRetryAttempts: 24,
  webhookMaxEventAgeHours: 24,
} as const;
