/** agent/compression — context counting, what to keep, and the summary call. */
export * from "./context.js";
export * from "./plan.js";
export * from "./summarize.js";
