import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// The bundle is committed under plait/web/static so that `pip install` needs no Node.js.
// File names carry content hashes: the same sources build the same files (the bundle
// check in tests/web/test_bundle.py rebuilds and compares them).
export default defineConfig({
  plugins: [react()],
  base: "/",
  build: {
    outDir: "../plait/web/static",
    emptyOutDir: true,
    chunkSizeWarningLimit: 4000,
    sourcemap: false,
  },
  worker: { format: "es" },
  server: { proxy: { "/api": "http://127.0.0.1:8765" } },
});
