/**
 * The web client's build: `web/` is the Vite root, the bundle goes to `web/dist` (gitignored) and
 * the gateway serves it at `/`. JSX is compiled by Vite's own esbuild for Preact (no plugin).
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const root = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root,
  base: "/",
  logLevel: "warn",
  publicDir: false,
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    chunkSizeWarningLimit: 700,
    rollupOptions: {
      // zod's sources carry comments rollup cannot place; harmless, and not ours to fix.
      onwarn(warning, warn) {
        if (warning.code === "INVALID_ANNOTATION") return;
        warn(warning);
      },
    },
  },
});
