#!/usr/bin/env node
/**
 * Builds the package into dist/ when it is missing or older than its sources:
 *
 *   node scripts/build.mjs            JavaScript (esbuild) and type declarations (tsc), if stale
 *   node scripts/build.mjs --js       JavaScript only, if stale (what tests and `npm start` need)
 *   node scripts/build.mjs --force    both, always
 *
 * JavaScript: esbuild bundles src/ into a few ES modules (entry points below + shared chunks),
 * with the runtime dependencies left as imports of node_modules — except zod, which is bundled
 * so that the 45 message locales Tether never uses are not loaded (and compiled) at every start,
 * and the CommonJS packages the start loads (REQUIRED_CJS), which are required, not imported.
 * Dynamic imports (PostgreSQL, Redis, the CLI's subcommands) stay separate chunks, loaded when used.
 * The command (dist/cli.js) is a build of its own that also bundles hono (CLI_BUNDLED); the
 * library's entry points leave hono to node_modules.
 * Why a bundle and not one file per module: a start loads ~140 of our modules and ~95 of zod's;
 * Node's ESM loader pays for each, and the start is measured (`npm run bench -- --only=startup`).
 *
 * Declarations: `tsc -p tsconfig.build.json` into dist/types/ (what `exports` points `types` at).
 *
 * `npm run build` runs it (with the web client), `prepare` runs that on `npm install` / `npm ci`
 * of a checkout, `pretest`/`prestart` and vitest's global setup run `--js`, so a stale dist/ is
 * never what a test spawns.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = dirname(dirname(fileURLToPath(import.meta.url)));
const dist = join(repo, "dist");
const STAMPS = { js: join(dist, ".js-stamp"), types: join(dist, "types", ".stamp") };

/** The package's entry points: `tether` (bin), `tether-gateway` (embed), `tether-gateway/client`, `tether-gateway/protocol`. */
export const ENTRY_POINTS = {
  cli: "src/cli/main.ts",
  index: "src/embed/index.ts",
  client: "src/client/index.ts",
  protocol: "src/protocol/index.ts",
};

const SOURCES = ["src", "package.json", "package-lock.json", "tsconfig.json", "tsconfig.build.json", "scripts/build.mjs"].map((p) => join(repo, p));

function newestMtime(path) {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** True when `stamp` exists and no source changed since it was written. */
export function isFresh(kind) {
  const stamp = STAMPS[kind];
  if (!existsSync(stamp)) return false;
  const built = statSync(stamp).mtimeMs;
  return SOURCES.every((s) => newestMtime(s) <= built);
}

/** esbuild plugin: zod's `locales` namespace keeps only English (the default error messages). */
const zodEnglishOnly = {
  name: "zod-english-only",
  setup(build) {
    build.onResolve({ filter: /\/locales\/index\.js$/ }, (args) => {
      if (!/[\\/]zod[\\/]/.test(args.importer)) return undefined;
      return { path: join(dirname(args.importer), args.path), namespace: "zod-locales" };
    });
    build.onLoad({ filter: /.*/, namespace: "zod-locales" }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(join(dirname(args.path), "en.js"))};\n`,
      resolveDir: dirname(args.path),
      loader: "js",
    }));
  },
};

/**
 * CommonJS packages the start loads, required instead of imported. An ES module importing a
 * CommonJS one makes Node load its export lexer, read and scan the package's source for export
 * names, and resolve and wrap it twice (ESM, then CJS): ~40 ms of a start for these four, measured
 * side by side with `require` (`npm run bench -- --only=startup`). `require` returns the same
 * `module.exports` the import's default and named exports are taken from, and resolves from the
 * same place (the chunk's folder, up through node_modules).
 */
export const REQUIRED_CJS = ["commander", "ws", "pino", "better-sqlite3"];

/**
 * esbuild plugin: `import … from "ws"` (a REQUIRED_CJS package, bare name) becomes a small module,
 * bundled, that requires it and re-exports what its `module.exports` has. The names are read from
 * the package at build time, as Node's loader reads them at run time.
 */
const cjsByRequire = {
  name: "cjs-by-require",
  setup(build) {
    const filter = new RegExp(`^(?:${REQUIRED_CJS.map((n) => n.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&")).join("|")})$`);
    build.onResolve({ filter }, (args) => (args.namespace === "cjs-by-require" ? undefined : { path: args.path, namespace: "cjs-by-require" }));
    build.onLoad({ filter: /.*/, namespace: "cjs-by-require" }, (args) => {
      const exported = createRequire(join(repo, "package.json"))(args.path);
      const names = Object.keys(exported).filter((k) => k !== "default" && /^[A-Za-z_$][\w$]*$/.test(k));
      const lines = [
        `import { createRequire as __createRequire } from "node:module";`,
        `const __cjs = __createRequire(import.meta.url)(${JSON.stringify(args.path)});`,
        `export default __cjs;`,
        ...names.map((n) => `export const ${n} = __cjs[${JSON.stringify(n)}];`),
      ];
      return { contents: lines.join("\n") + "\n", loader: "js", resolveDir: repo };
    });
  },
};

/**
 * Bundled into the command's build (dist/cli.js and its chunks), left external in the library's:
 * hono and its node adapter are ~30 ES modules that Node's loader resolves, reads and links one by
 * one at every start, where bundled they are part of one chunk and only what is used is kept
 * (3 % fewer instructions to the listening line, callgrind, and ~1 MiB of idle RSS). The library (`tether-gateway`) keeps them external:
 * `createTether` hands its routes to the embedding application's own hono, and one hono between
 * them keeps `instanceof` (HTTPException, the app classes) true.
 */
export const CLI_BUNDLED = ["hono", "@hono/node-server"];

/** Every runtime dependency but zod (and, for the command, CLI_BUNDLED) stays an import of node_modules. */
function externals(bundled = []) {
  const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8"));
  const names = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.optionalDependencies ?? {})].filter((n) => n !== "zod" && !bundled.includes(n));
  return names.flatMap((n) => [n, `${n}/*`]);
}

/**
 * Every built module made pure ASCII. esbuild escapes non-ASCII characters in strings, templates
 * and regular expressions (its default charset), but not in the comments it keeps — and one "—"
 * in a comment makes V8 hold the whole module's source as two-byte text: the start's two big
 * chunks took 2.2 MB of heap instead of 1.1, and decoding and scanning them took longer. Only
 * comments are left to change; each UTF-16 unit becomes one "?", so the source maps still match.
 */
function asciiOnly(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) asciiOnly(path);
    else if (entry.name.endsWith(".js")) {
      const text = readFileSync(path, "utf8");
      if (/[^\x00-\x7f]/.test(text)) writeFileSync(path, text.replace(/[^\x00-\x7f]/g, "?"));
    }
  }
}

export async function buildJs() {
  const esbuild = await import("esbuild");
  // Only our own output: dist/types (declarations) is left alone.
  for (const entry of existsSync(dist) ? readdirSync(dist) : []) {
    if (entry !== "types") rmSync(join(dist, entry), { recursive: true, force: true });
  }
  const common = {
    absWorkingDir: repo,
    outdir: dist,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    sourcemap: true,
    // Shared code and lazily imported parts (PostgreSQL, Redis, subcommands). Paths to package
    // files are found from the package root at run time (src/lib/package-root.ts), not by depth.
    chunkNames: "chunks/[name]-[hash]",
    plugins: [zodEnglishOnly, cjsByRequire],
    logLevel: "warning",
    legalComments: "none",
  };
  // Two builds: the command with hono bundled (CLI_BUNDLED), the library and the SDK entry points
  // with it external. Chunk names carry a hash of their contents, so the two never overwrite each
  // other's chunks with different code.
  const { cli, ...library } = ENTRY_POINTS;
  await Promise.all([
    esbuild.build({ ...common, entryPoints: { cli }, external: externals(CLI_BUNDLED) }),
    esbuild.build({ ...common, entryPoints: library, external: externals() }),
  ]);
  asciiOnly(dist);
  mkdirSync(dist, { recursive: true });
  writeFileSync(STAMPS.js, `${new Date().toISOString()}\n`);
}

export function buildTypes() {
  rmSync(join(dist, "types"), { recursive: true, force: true });
  const tsc = join(repo, "node_modules", "typescript", "bin", "tsc");
  execFileSync(process.execPath, [tsc, "-p", join(repo, "tsconfig.build.json")], { stdio: "inherit" });
  writeFileSync(STAMPS.types, `${new Date().toISOString()}\n`);
}

/** Builds what is stale (or everything with `force`); returns what it built. */
export async function build({ js = true, types = true, force = false } = {}) {
  const built = [];
  if (js && (force || !isFresh("js"))) {
    await buildJs();
    built.push("js");
  }
  if (types && (force || !isFresh("types"))) {
    buildTypes();
    built.push("types");
  }
  return built;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const force = args.includes("--force");
  const jsOnly = args.includes("--js");
  const started = Date.now();
  build({ js: true, types: !jsOnly, force }).then(
    (built) => {
      if (built.length > 0) console.error(`tether: built ${built.join(" + ")} into dist/ in ${Date.now() - started} ms`);
    },
    (err) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
