/** config/ — defaults, file, env and flags, validated once. */
export * from "./config.js";
export * from "./config-file.js";
export * from "./load.js";
export * from "./show.js";
export * from "./tools-config.js";
export * from "./workspace-config.js";
