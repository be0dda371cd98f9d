#!/usr/bin/env node
// The `tether` command: runs the compiled build in dist/ (`npm run build`; `npm install` of a
// checkout builds it through `prepare`, and an installed package ships it).
import { existsSync } from "node:fs";

const main = new URL("../dist/cli.js", import.meta.url);
if (!existsSync(main)) {
  process.stderr.write("tether: dist/ is missing: run `npm run build` (or `npm install`) in the package folder first\n");
  process.exit(1);
}
await import(main.href);
