#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx's loader: no build step between a fresh clone
// and a running gateway.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
