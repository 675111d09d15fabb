/** A function environment loadConfig takes (shared/aws/config.ts), for tests that vary one variable of it. */
export const VALID_FUNCTION_ENV: Readonly<Record<string, string>> = {
  TENANT_ID: "acme",
  QASHIO_BASE_URL: "https://api.example.com/",
  TABLE_NAME: "bridge",
  SECRET_ID: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme-AbCdEf",
  EVENT_BUS_NAME: "bridge-bus",
  PII_MODE: "hash",
  POWERTOOLS_SERVICE_NAME: "qashio-bridge",
};
