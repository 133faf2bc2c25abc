import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// `npm run dev` serves the app on http://127.0.0.1:5173 and forwards the API (HTTP, the
// WebSocket and attachment downloads) to the gateway, so the page and the API share an origin:
// no CORS settings are needed. GATEWAY_URL says where the gateway is.
const gateway = process.env.GATEWAY_URL ?? "http://127.0.0.1:8000";
const api = { "/graphql": { target: gateway, ws: true }, "/attachments": { target: gateway } };

export default defineConfig({
  plugins: [react()],
  server: { host: "127.0.0.1", port: 5173, strictPort: true, proxy: api },
  preview: { host: "127.0.0.1", port: 4173, strictPort: true, proxy: api },
});
