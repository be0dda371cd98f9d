/**
 * The MCP transports' size limit and the error word of an answer over it, on their own: the tool
 * side (mcp-tool.ts, loaded at every start) needs the word, and must not import the transports,
 * which import the MCP SDK — loaded only when a server is connected (sdk-loader.ts).
 */

/** The largest MCP message the gateway reads (over stdio and HTTP); a larger answer fails its call. */
export const MAX_MCP_MESSAGE_BYTES = 16 * 1024 * 1024;
/** `error.data.tether` of the answer that stands in for a skipped one (mcp-tool.ts words it). */
export const RESULT_TOO_LARGE = "result_too_large";
