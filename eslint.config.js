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
    },
  },
  {
    // Lambda code and the engine must not print: they log through the Logger port.
    files: ["shared/bridge/**", "shared/aws/**", "functions/**", "shared/qashio/**"],
    rules: { "no-console": "error" },
  },
);
