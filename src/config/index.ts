/** config/ — defaults, file, env and flags, validated once. */
export * from "./config.js";
export { API_SCOPES, DEFAULT_KEY_SCOPES, type ApiScope, type KeyGrant, type ProfileGrant } from "./auth-keys.js";
export * from "./config-file.js";
export * from "./load.js";
export * from "./show.js";
export * from "./tools-config.js";
export * from "./workspace-config.js";
