#!/usr/bin/env node
// `node bin/run-ts.js file.ts args…`: runs a TypeScript entry point (benchmarks, scripts) via tsx.
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";
import { register } from "tsx/esm/api";

register();
const [entry, ...rest] = process.argv.slice(2);
if (!entry) {
  console.error("usage: run-ts.js FILE.ts [args…]");
  process.exit(2);
}
process.argv = [process.argv[0], entry, ...rest];
await import(pathToFileURL(resolve(entry)).href);
