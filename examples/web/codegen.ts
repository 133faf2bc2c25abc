// graphql-codegen: typed documents for every `graphql(...)` call in src/, from the gateway's
// checked-in schema. `npm run codegen` rewrites src/gql/ (checked in, so it can be read);
// `npm run build` runs it first, and the suite fails when the checked-in copy is stale.
import type { CodegenConfig } from "@graphql-codegen/cli";

const config: CodegenConfig = {
  schema: "../../schema.graphql",
  documents: ["src/**/*.{ts,tsx}", "!src/gql/**"],
  generates: {
    "src/gql/": {
      preset: "client",
      // Each screen reads the fields its own documents select; no fragment masking to unwrap.
      presetConfig: { fragmentMasking: false },
      config: {
        scalars: { DateTime: "string", Upload: "File" },
        enumsAsTypes: true,
        useTypeImports: true,
      },
    },
    // The schema's `ErrorCode` (every `extensions.code`): no field returns it, so the client
    // preset, which emits what documents use, leaves it out.
    "src/gql/errors.ts": {
      plugins: ["typescript"],
      config: { onlyEnums: true, enumsAsTypes: true },
    },
  },
};

export default config;
