interface ImportMetaEnv {
  /** The GraphQL endpoint, when it is not /graphql on the page's own origin. */
  readonly VITE_GRAPHQL_URL?: string;
}
