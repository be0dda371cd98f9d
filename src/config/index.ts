/** config/ — defaults, env and flags, validated once. */
export * from "./config.js";
