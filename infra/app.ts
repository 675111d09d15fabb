/**
 * CDK entry point (cdk.json: `npx tsx infra/app.ts`): builds the app from its context (app-context.ts lists the
 * settings) and synthesizes it.
 */
import { App } from "aws-cdk-lib";
import { buildBridgeApp } from "./app-builder.js";
import { bridgeAppOptionsFromContext } from "./app-context.js";
import { InfraError } from "./errors.js";

const app = new App();
try {
  buildBridgeApp({ ...bridgeAppOptionsFromContext(app, process.env), app });
  app.synth();
} catch (error) {
  if (!(error instanceof InfraError)) throw error;
  // a configuration mistake: the message names tenant and field, a stack trace would only hide it
  console.error(`qashio-bridge synth failed: ${error.message}`);
  // Not process.exit(): on Node 24 it can hang for good when V8 is still compiling in the background, as it is just
  // after aws-cdk-lib has loaded (nodejs/node#64274; `cdk synth`, and the tests that run this file, waited for ever).
  process.exitCode = 1;
}
