/**
 * The config file speaks snake_case (`ws_only`, `max_frame_bytes`); a few long-standing internal
 * keys are camelCase (`wsOnly`, `maxFrameBytes`). This maps between the two by walking the zod
 * schema, so a file key is accepted in either spelling and `config show` prints file spelling.
 */
import type * as z from "zod";

interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  valueType?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
  in?: z.ZodType;
}

function def(schema: z.ZodType): Def {
  return (schema as unknown as { _zod: { def: Def } })._zod.def;
}

/** Unwraps default/prefault/optional/nullable wrappers down to the schema that has a shape. */
export function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (;;) {
    const d = def(s);
    if (d.innerType && ["default", "prefault", "optional", "nullable", "readonly", "catch"].includes(d.type)) {
      s = d.innerType;
      continue;
    }
    // A transform (`.transform`, `.pipe`) reads what its input schema reads.
    if (d.type === "pipe" && d.in) {
      s = d.in;
      continue;
    }
    return s;
  }
}

export function shapeOf(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  const d = def(unwrap(schema));
  return d.type === "object" ? d.shape : undefined;
}

export function recordValueOf(schema: z.ZodType): z.ZodType | undefined {
  const d = def(unwrap(schema));
  return d.type === "record" ? d.valueType : undefined;
}

function arrayElementOf(schema: z.ZodType): z.ZodType | undefined {
  const d = def(unwrap(schema));
  return d.type === "array" ? d.element : undefined;
}

/**
 * The keys a mapping may have here, from the schema itself: an object's shape, or for a union
 * (`workspace: true` or `workspace: { … }`) the shapes of its object options together. Undefined
 * where the keys are the user's own (a record: servers, env variables, headers) or not a mapping.
 */
function knownShape(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  const own = shapeOf(schema);
  if (own) return own;
  const d = def(unwrap(schema));
  if (d.type !== "union" || !d.options) return undefined;
  const merged: Record<string, z.ZodType> = {};
  for (const option of d.options) Object.assign(merged, shapeOf(option) ?? {});
  return Object.keys(merged).length > 0 ? merged : undefined;
}

/** A key of the file that no schema knows: where it was written, and the keys it could have meant. */
export interface UnknownKey {
  /** The path as written in the file, the unknown key last. */
  written: PropertyKey[];
  /** The keys known beside it, in file spelling. */
  known: string[];
}

const snakeToCamel = (k: string) => k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
export const camelToSnake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Aliases a file may use for internal keys whose name differs by more than case style. */
const ALIASES: Record<string, string> = { db: "dbPath", db_path: "dbPath" };

/**
 * Renames the keys of a parsed file to the schema's keys. `origin` receives, for each internal
 * path, the path as written in the file (for error lines and provenance). A key that the schema
 * does not have where it was written goes to `unknown` (and on, as written): the config is strict,
 * and what it knows is exactly what the schemas declare — a key added to a schema is known at once.
 */
export function toSchemaKeys(
  value: unknown,
  schema: z.ZodType,
  origin: Map<string, PropertyKey[]>,
  internal: PropertyKey[] = [],
  written: PropertyKey[] = [],
  unknown: UnknownKey[] = [],
): unknown {
  if (Array.isArray(value)) {
    origin.set(internal.join("."), written);
    const element = arrayElementOf(schema);
    return element ? value.map((v, i) => toSchemaKeys(v, element, origin, [...internal, i], [...written, i], unknown)) : value;
  }
  if (typeof value !== "object" || value === null) {
    origin.set(internal.join("."), written);
    return value;
  }
  const shape = knownShape(schema);
  const recordValue = recordValueOf(schema);
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    let name = key;
    let child: z.ZodType | undefined;
    if (shape) {
      const alias = internal.length === 0 ? ALIASES[key] : undefined;
      name = key in shape ? key : alias && alias in shape ? alias : snakeToCamel(key) in shape ? snakeToCamel(key) : key;
      child = shape[name];
      if (!child) unknown.push({ written: [...written, key], known: Object.keys(shape).map(fileSpelling) });
    } else if (recordValue) {
      child = recordValue;
    }
    const ip = [...internal, name];
    const wp = [...written, key];
    origin.set(ip.join("."), wp);
    out[name] = child ? toSchemaKeys(v, child, origin, ip, wp, unknown) : v;
  }
  return out;
}

const fileSpelling = (key: string): string => (key === "dbPath" ? "db" : camelToSnake(key));

/**
 * The file spelling of an internal path. Only schema keys are respelled: a record's keys are the
 * user's own words (a server named `Files`, an env variable `LOG_LEVEL`, a header `Authorization`)
 * and are shown as written.
 */
export function toFileKeys(path: PropertyKey[], schema?: z.ZodType): string {
  let at: z.ZodType | undefined = schema;
  return path
    .map((p) => {
      const key = String(p);
      if (at && recordValueOf(at)) {
        at = recordValueOf(at);
        return key;
      }
      const shape = at ? shapeOf(at) : undefined;
      at = shape?.[key];
      if (schema && !shape) return key;
      return key === "dbPath" ? "db" : camelToSnake(key);
    })
    .join(".");
}
