#!/usr/bin/env node
/**
 * Builds the web client into web/dist when it is missing or older than its sources (web/, and the
 * SDK and protocol it bundles). `npm start` and `npm test` run it first; a fresh build takes a few
 * seconds, an up-to-date one a few milliseconds. `--force` always builds.
 *
 * Without Vite (a production install that omitted devDependencies) an existing build is served as
 * is; a missing one is an error that says what to do.
 */
import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const webDir = dirname(fileURLToPath(import.meta.url));
const repo = dirname(webDir);
const dist = join(webDir, "dist");
const stamp = join(dist, ".build-stamp");
const sources = [
  join(webDir, "src"),
  join(webDir, "index.html"),
  join(webDir, "vite.config.ts"),
  join(repo, "src", "client"),
  join(repo, "src", "protocol"),
  join(repo, "package-lock.json"),
];

function newestMtime(path) {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

export function webBuildIsFresh() {
  if (!existsSync(stamp) || !existsSync(join(dist, "index.html"))) return false;
  const built = statSync(stamp).mtimeMs;
  return sources.every((s) => newestMtime(s) <= built);
}

export async function buildWeb({ force = false, quiet = false } = {}) {
  if (!force && webBuildIsFresh()) return false;
  let vite;
  try {
    vite = await import("vite");
  } catch {
    if (existsSync(join(dist, "index.html"))) {
      console.warn("web client: vite is not installed; serving the existing web/dist as is");
      return false;
    }
    throw new Error("web client: web/dist is missing and vite is not installed: run `npm install` (with dev dependencies), then `npm run build:web`");
  }
  const started = Date.now();
  await vite.build({ configFile: join(webDir, "vite.config.ts"), logLevel: quiet ? "silent" : "warn" });
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
  if (!quiet) console.log(`web client built into web/dist in ${Date.now() - started} ms`);
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  buildWeb({ force: process.argv.includes("--force") }).catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
