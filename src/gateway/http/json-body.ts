/**
 * Request bodies: refuse one nested past `limits.max_json_depth` (400 `json_too_deep`), parse JSON, then validate with a zod schema. Malformed JSON answers 400
 * `invalid_json`; a schema failure answers 400 `invalid_params` with `param` naming the first bad
 * field and the message naming all of them (`messages.0.role, model`) — or, for the OpenAI
 * endpoints, an unknown key first: `unknown_parameter` naming its path, as OpenAI answers.
 */
import type { Context } from "hono";
import type * as z from "zod";
import { paramIssues, UNKNOWN_KEY } from "../../protocol/param-issues.js";
import { DEFAULT_MAX_JSON_DEPTH, jsonDepthExceeds, jsonTooDeepMessage } from "../../protocol/json-depth.js";
import { HttpError, HttpErrors } from "./errors.js";

/** OpenAI's code for a parameter it does not know, top-level or nested (`Unrecognized request argument supplied: …`). */
export const UNKNOWN_PARAMETER = "unknown_parameter";

export interface ReadOptions {
  /**
   * The code of the 400 when the first bad field is an unknown key (the OpenAI endpoints answer
   * `unknown_parameter`, as OpenAI does); default `invalid_params`.
   */
  unknownCode?: string;
}

export async function readJson<S extends z.ZodType>(c: Context, schema: S, opts: ReadOptions = {}): Promise<z.output<S>> {
  const text = await c.req.text();
  // Before the parse: validating a value 100,000 levels deep overflows the stack (a 500 with a RangeError).
  const maxDepth = (c.get("maxJsonDepth") as number | undefined) ?? DEFAULT_MAX_JSON_DEPTH;
  if (jsonDepthExceeds(text, maxDepth)) throw new HttpError(400, "json_too_deep", jsonTooDeepMessage(maxDepth));
  let value: unknown;
  try {
    value = text.trim() === "" ? undefined : JSON.parse(text);
  } catch (err) {
    throw HttpErrors.invalidJson(err instanceof Error ? err.message : String(err));
  }
  if (value === undefined) throw HttpErrors.invalidJson("the body is empty; send a JSON object");
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = paramIssues(parsed.error);
    const paths = issues.map((i) => i.path || "(body)");
    const first = issues[0]!;
    if (opts.unknownCode && first.message === UNKNOWN_KEY) {
      throw new HttpError(400, opts.unknownCode, `Unrecognized request argument supplied: ${first.path}`, first.path);
    }
    throw new HttpError(
      400,
      "invalid_params",
      `Invalid request body: ${[...new Set(paths)].join(", ")} (${paths[0]}: ${first.message})`,
      paths[0] ?? null,
    );
  }
  return parsed.data;
}

/** A non-negative integer query parameter, or undefined. */
export function queryInt(c: Context, name: string, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const raw = c.req.query(name);
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > max) {
    throw HttpErrors.invalid(name, `Query parameter ${name} must be an integer between 0 and ${max}`);
  }
  return n;
}

export function queryBool(c: Context, name: string): boolean | undefined {
  const raw = c.req.query(name);
  if (raw === undefined || raw === "") return undefined;
  if (raw === "true" || raw === "1") return true;
  if (raw === "false" || raw === "0") return false;
  throw HttpErrors.invalid(name, `Query parameter ${name} must be true or false`);
}
