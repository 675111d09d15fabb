/**
 * A standard JSON Schema (2020-12) validator for the documents the project publishes (event schemas, tenants file):
 * what a consumer outside this code base would check against, strict about the schema itself.
 */
import { Ajv2020, type Options, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

/** Compiles `schema` with strict mode, every error reported and the standard formats; `options` loosen or add. */
export function compileJsonSchema(schema: object, options: Options = {}): ValidateFunction {
  const ajv = new Ajv2020({ strict: true, allErrors: true, ...options });
  addFormats.default(ajv);
  return ajv.compile(schema);
}
