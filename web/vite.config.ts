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
  // jsxDev off always: Vite turns it on whenever NODE_ENV is not "production" — e.g. NODE_ENV=test
  // when a vitest run rebuilds the page (test/web/browser.ts) — which put a jsxDEV call with this
  // machine's absolute source paths on every element (+17 KB) into web/dist, then served as is.
  esbuild: { jsx: "automatic", jsxImportSource: "preact", jsxDev: false },
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
