import js from "@eslint/js";
import tseslint from "typescript-eslint";
import globals from "globals";

export default tseslint.config(
  { ignores: ["node_modules/", "cdk.out/", "coverage/", ".state/", "docs/events/*.json"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "no-console": "off",
      // Bundled, `import { z }` keeps every export of zod (its 60-odd locales among them) in each Lambda bundle;
      // `import * as z` lets esbuild drop what is not used (test/functions/bundle-contents.test.ts).
      "no-restricted-syntax": [
        "error",
        {
          selector: "ImportDeclaration[source.value='zod'] > :matches(ImportSpecifier[imported.name='z'], ImportDefaultSpecifier)",
          message: 'Use `import * as z from "zod"`, which esbuild can tree-shake.',
        },
      ],
    },
  },
  {
    // Lambda code and the engine must not print: they log through the Logger port.
    files: ["shared/bridge/**", "shared/aws/**", "functions/**", "shared/qashio/**"],
    rules: { "no-console": "error" },
  },
);
