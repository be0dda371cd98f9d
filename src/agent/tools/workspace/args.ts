/** Argument parsing shared by the workspace tools: zod, with an error the model can act on. */
import type * as z from "zod";
import { ToolInputError } from "../registry.js";

export function parseArgs<T extends z.ZodTypeAny>(tool: string, schema: T, args: unknown): z.infer<T> {
  const parsed = schema.safeParse(args);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "args"}: ${i.message}`).join("; ");
    throw new ToolInputError(`invalid ${tool} arguments: ${issues}`);
  }
  return parsed.data;
}
