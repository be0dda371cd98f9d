/**
 * What the browser bundle may contain, checked statically (no build, ~100 ms): the run-time import
 * graph of the web client (web/src/main.tsx) and of the SDK (src/client/index.ts), parsed with the
 * TypeScript compiler. Type-only imports (`import type`, `export type`) are erased and not
 * followed; every other import is (including `import { type A }`, which verbatimModuleSyntax keeps
 * as a side-effect import).
 *
 * Why: the param schemas of src/protocol pulled zod (~90 KB of a 300 KB bundle) into the page,
 * which never validates params. They now live in src/protocol/method-params.ts, which only the
 * gateway imports. This test fails, naming the import chain, if zod, that module, a Node built-in
 * or any server layer comes back into the page or the SDK.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const REPO = resolve(new URL("../../", import.meta.url).pathname);

interface Graph {
  /** Every file reached at run time, with the file that imported it first (the entry: null). */
  files: Map<string, string | null>;
  /** Every bare specifier reached (package or built-in), with the file that imported it. */
  packages: Map<string, string>;
  unresolved: string[];
}

/** The module specifiers of `file` that survive compilation (type-only ones are erased). */
function runtimeSpecifiers(file: string): string[] {
  const src = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      if (!node.importClause?.isTypeOnly && ts.isStringLiteral(node.moduleSpecifier)) out.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node)) {
      if (!node.isTypeOnly && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) out.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) out.push(arg.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return out;
}

function isFile(p: string): boolean {
  return existsSync(p) && statSync(p).isFile();
}

/** A relative specifier as the bundler resolves it (`./x.js` is `./x.ts` in the sources). */
function resolveRelative(from: string, spec: string): string | null {
  const base = resolve(dirname(from), spec);
  const candidates = [base];
  if (/\.(m?js|jsx)$/.test(base)) {
    const stem = base.replace(/\.(m?js|jsx)$/, "");
    candidates.push(`${stem}.ts`, `${stem}.tsx`, `${stem}.mts`);
  }
  candidates.push(`${base}.ts`, `${base}.tsx`, join(base, "index.ts"));
  return candidates.find(isFile) ?? null;
}

function packageName(spec: string): string {
  const parts = spec.split("/");
  return spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

function walk(entry: string): Graph {
  const graph: Graph = { files: new Map([[entry, null]]), packages: new Map(), unresolved: [] };
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.shift()!;
    if (!/\.(m?ts|tsx)$/.test(file)) continue; // CSS and the like: nothing to follow
    for (const spec of runtimeSpecifiers(file)) {
      if (spec.startsWith(".") || spec.startsWith("/")) {
        const target = resolveRelative(file, spec);
        if (!target) graph.unresolved.push(`${rel(file)} → ${spec}`);
        else if (!graph.files.has(target)) {
          graph.files.set(target, file);
          queue.push(target);
        }
      } else {
        const name = spec.startsWith("node:") ? spec : packageName(spec);
        if (!graph.packages.has(name)) graph.packages.set(name, file);
      }
    }
  }
  return graph;
}

function rel(p: string): string {
  return relative(REPO, p);
}

/** `web/src/main.tsx → web/src/controller.ts → … → file`: how the entry reaches `file`. */
function chain(graph: Graph, file: string): string {
  const steps: string[] = [];
  for (let at: string | null | undefined = file; at; at = graph.files.get(at)) steps.unshift(rel(at));
  return steps.join(" → ");
}

const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
/** Server-only modules: a page or SDK reaching one of these bundles the server's dependencies. */
const SERVER_ONLY_FILES = ["src/protocol/method-params.ts"];
/** The folders a browser bundle may take code from. */
const BROWSER_DIRS = ["web/src/", "src/client/", "src/protocol/"];
/** The web client's run-time dependencies (devDependencies, bundled by Vite). Add one on purpose. */
// lucide: the icon set (SVG node data only); @tanstack/virtual-core: the long transcript's virtualiser;
// katex: math, imported by web/src/math.ts only, which the page loads on demand (a chunk of its own).
const WEB_PACKAGES = new Set(["preact", "dompurify", "highlight.js", "marked", "lucide", "@tanstack/virtual-core", "katex"]);

/** Every rule broken by a browser graph, each naming the import chain that breaks it. */
function violations(graph: Graph, allowedPackages: ReadonlySet<string>): string[] {
  const out = graph.unresolved.map((u) => `unresolved import: ${u}`);
  for (const [name, importer] of graph.packages) {
    if (name === "zod") out.push(`zod (server-side validation) reached: ${chain(graph, importer)} → zod`);
    else if (BUILTINS.has(name)) out.push(`Node built-in ${name} reached: ${chain(graph, importer)} → ${name}`);
    else if (!allowedPackages.has(name)) out.push(`package ${name} is not allowed here: ${chain(graph, importer)} → ${name}`);
  }
  for (const file of graph.files.keys()) {
    const r = rel(file);
    if (SERVER_ONLY_FILES.includes(r)) out.push(`server-only module reached: ${chain(graph, file)}`);
    else if (!BROWSER_DIRS.some((d) => r.startsWith(d))) out.push(`outside web/src, src/client, src/protocol: ${chain(graph, file)}`);
  }
  return out;
}

describe("browser bundle import graph", () => {
  it("the web client (web/src/main.tsx) reaches no zod, no server module, no Node built-in", () => {
    const graph = walk(join(REPO, "web/src/main.tsx"));
    expect(violations(graph, WEB_PACKAGES)).toEqual([]);
    // The walk is real: it went through the SDK into the protocol.
    const files = [...graph.files.keys()].map(rel);
    expect(files).toContain("src/client/index.ts");
    expect(files).toContain("src/protocol/methods.ts");
    expect([...graph.packages.keys()]).toContain("preact");
  });

  it("the SDK (src/client/index.ts) has no run-time dependency at all, zod included", () => {
    const graph = walk(join(REPO, "src/client/index.ts"));
    expect(violations(graph, new Set())).toEqual([]);
    expect([...graph.files.keys()].map(rel)).toContain("src/protocol/index.ts");
  });

  it("the check sees zod where it is (the gateway's dispatch), and skips type-only imports", () => {
    const gateway = walk(join(REPO, "src/gateway/rpc-dispatch.ts"));
    expect(violations(gateway, new Set()).some((v) => v.startsWith("zod"))).toBe(true);
    // methods.ts names the schema module and zod only in `import type`: erased, not followed.
    expect(runtimeSpecifiers(join(REPO, "src/protocol/methods.ts"))).toEqual([]);
  });
});
