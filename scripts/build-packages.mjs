#!/usr/bin/env node
/**
 * Builds the two small packages of the workspace from the sources in src/ (which stay where they
 * are: the server bundles the same files):
 *
 *   packages/client    tether-gateway-client    the SDK (src/client, with the protocol constants it uses)
 *   packages/protocol  tether-gateway-protocol  the wire names and types (src/protocol)
 *   packages/react     tether-gateway-react     useSession, the React hook (src/react; react and tether-gateway-client
 *                                                are peer dependencies, not bundled in)
 *
 * Each gets an ES module and a CommonJS build (esbuild, `platform: "neutral"`: no Node built-in can
 * creep in, so both run in browsers and Node) and declarations for each, zod-free:
 *
 *   dist/esm/index.js   dist/esm/types/…   ("import" condition; the package is "type": "module")
 *   dist/cjs/index.js   dist/cjs/types/…   ("require"; dist/cjs/package.json says "commonjs")
 *
 * Why zod-free declarations: protocol/methods.ts types each method's params as
 * `z.input<typeof Schema>` of the gateway's validators (protocol/method-params.ts), so plain
 * declarations would import "zod" — a dependency the SDK does not have. The build asks the
 * TypeScript checker for each of those types written out (`{ session_id: string; … }`) and puts
 * that in the package's methods.d.ts instead; it fails if "zod" is still named anywhere.
 *
 *   node scripts/build-packages.mjs [--force]   (when stale; `npm run build` runs it, and
 *                                               test/faults/package-install.test.ts packs the result)
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const repo = dirname(dirname(fileURLToPath(import.meta.url)));

/** Each package: its folder, its entry in src/, and which declaration folders it ships. */
export const PACKAGES = [
  { dir: "packages/client", entry: "src/client/index.ts", typesEntry: "client/index.d.ts", typeDirs: ["client", "protocol"] },
  { dir: "packages/protocol", entry: "src/protocol/index.ts", typesEntry: "protocol/index.d.ts", typeDirs: ["protocol"] },
  // useSession: React and the SDK are the app's (peer dependencies). A copy of the SDK bundled in
  // would be a second TetherClient and RpcError: the app's client would not type-check as the
  // hook's, and the view's `instanceof RpcError` would miss every error the app's client throws.
  { dir: "packages/react", entry: "src/react/index.ts", typesEntry: "react/index.d.ts", typeDirs: ["react"], external: ["react"], sdkExternal: true },
];

/** `z.input<typeof X>` in protocol/methods.ts → the type written out, from the checker. */
async function expandedParamTypes() {
  const { default: ts } = await import("typescript");
  const file = join(repo, "src/protocol/methods.ts");
  const program = ts.createProgram([file], {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  const out = new Map();
  const visit = (node) => {
    if (ts.isTypeReferenceNode(node) && node.getText(source).startsWith("z.input<")) {
      const text = checker.typeToString(checker.getTypeFromTypeNode(node), undefined, ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.InTypeAlias);
      out.set(node.getText(source), text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  if (out.size === 0) throw new Error("build-packages: no z.input<…> found in src/protocol/methods.ts (did it change?)");
  return out;
}

/** Declarations of src/client and src/protocol (tsc), with methods.d.ts made zod-free. */
async function buildDeclarations() {
  const out = mkdtempSync(join(tmpdir(), "tether-pkg-types-"));
  const tsconfig = join(out, "tsconfig.json");
  writeFileSync(
    tsconfig,
    JSON.stringify({
      extends: join(repo, "tsconfig.json"),
      compilerOptions: {
        noEmit: false,
        emitDeclarationOnly: true,
        declaration: true,
        incremental: false,
        rootDir: join(repo, "src"),
        outDir: join(out, "types"),
        // No @types/node: a Node type in the SDK's declarations would not type-check in a browser app.
        types: [],
        lib: ["ES2023", "DOM"],
      },
      include: [],
      files: PACKAGES.map((p) => join(repo, p.entry)),
    }),
  );
  execFileSync(process.execPath, [join(repo, "node_modules", "typescript", "bin", "tsc"), "-p", tsconfig], { stdio: "inherit" });
  const types = join(out, "types");
  const methods = join(types, "protocol", "methods.d.ts");
  let text = readFileSync(methods, "utf8");
  for (const [written, expanded] of await expandedParamTypes()) text = text.split(written).join(expanded);
  text = text.replace(/^import type (?:\{ z \}|\* as z) from "zod";\n/m, "").replace(/^import type \{[^}]*\} from "\.\/method-params\.js";\n/m, "");
  writeFileSync(methods, text);
  // Only the gateway imports these (the zod schemas): not part of any package's types.
  for (const f of ["method-params.d.ts", "param-issues.d.ts"]) rmSync(join(types, "protocol", f), { force: true });
  for (const f of walk(types)) {
    const body = readFileSync(f, "utf8");
    if (/(?:from |import\()["'](?:zod(?:\/[^"']*)?|[^"']*method-params[^"']*)["']|\bz\.(?:input|infer|output)</.test(body)) throw new Error(`build-packages: ${relative(types, f)} still refers to zod`);
  }
  return { out, types };
}

/** The SDK's entry imported from src/react is the package `tether-gateway-client`, left to the app. */
const SDK_ENTRY = /^\.\.\/client\/index\.js$/;
const SDK_AS_PACKAGE = {
  name: "sdk-as-package",
  setup(build) {
    build.onResolve({ filter: SDK_ENTRY }, () => ({ path: "tether-gateway-client", external: true }));
  },
};

/** The same in the declarations: react/*.d.ts import "tether-gateway-client"; anything else of the SDK's sources is an error. */
function sdkImportsAsPackage(typesDir) {
  for (const f of walk(join(typesDir, "react"))) {
    const body = readFileSync(f, "utf8").replace(/(from |import\()"\.\.\/client\/index\.js"/g, '$1"tether-gateway-client"');
    if (/["']\.\.\/(?:client|protocol)\//.test(body)) throw new Error(`build-packages: ${f} imports the SDK's sources other than through its entry`);
    writeFileSync(f, body);
  }
}

function walk(dir) {
  return readdirSync(dir).flatMap((e) => {
    const p = join(dir, e);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

const SOURCES = ["src/client", "src/protocol", "src/react", "scripts/build-packages.mjs", "tsconfig.json", ...PACKAGES.map((p) => `${p.dir}/package.json`)].map((p) => join(repo, p));
const stampOf = (pkg) => join(repo, pkg.dir, "dist", ".stamp");

function newestMtime(path) {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  return st.isDirectory() ? Math.max(st.mtimeMs, ...readdirSync(path).map((e) => newestMtime(join(path, e)))) : st.mtimeMs;
}

/** True when every package has a stamp newer than every source it is built from. */
export function packagesFresh() {
  const newest = Math.max(...SOURCES.map(newestMtime));
  return PACKAGES.every((p) => existsSync(stampOf(p)) && statSync(stampOf(p)).mtimeMs >= newest);
}

/** Builds the packages when stale (or always with `force`); true when it built. */
export async function buildPackages({ force = false } = {}) {
  if (!force && packagesFresh()) return false;
  const esbuild = await import("esbuild");
  const { out, types } = await buildDeclarations();
  try {
    for (const pkg of PACKAGES) {
      const dist = join(repo, pkg.dir, "dist");
      rmSync(dist, { recursive: true, force: true });
      for (const format of ["esm", "cjs"]) {
        await esbuild.build({
          absWorkingDir: repo,
          entryPoints: [pkg.entry],
          outfile: join(dist, format, "index.js"),
          bundle: true,
          format,
          platform: "neutral",
          target: "es2022",
          sourcemap: true,
          legalComments: "none",
          logLevel: "warning",
          external: pkg.external ?? [],
          plugins: pkg.sdkExternal ? [SDK_AS_PACKAGE] : [],
        });
        for (const d of pkg.typeDirs) cpSync(join(types, d), join(dist, format, "types", d), { recursive: true });
        if (pkg.sdkExternal) sdkImportsAsPackage(join(dist, format, "types"));
      }
      writeFileSync(join(dist, "cjs", "package.json"), `${JSON.stringify({ type: "commonjs" })}\n`);
      writeFileSync(stampOf(pkg), `${new Date().toISOString()}\n`);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = Date.now();
  buildPackages({ force: process.argv.includes("--force") }).then(
    (built) => {
      if (built) console.error(`tether: built ${PACKAGES.map((p) => p.dir).join(", ")} in ${Date.now() - started} ms`);
    },
    (err) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
