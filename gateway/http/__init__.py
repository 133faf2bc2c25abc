"""HTTP conventions of the GraphQL endpoint: media types, CORS, compression."""
