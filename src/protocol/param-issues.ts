/**
 * What is wrong with a request's params, one entry per field: the path of the field and why. An
 * unknown field is named by its own path (`foo`, `client_tools.0.colour`) — a request parameter is
 * never silently dropped, so the client learns which one Tether does not take.
 */
import type { z } from "zod";

export interface ParamIssue {
  /** Dotted path of the field; empty for the params as a whole. */
  path: string;
  message: string;
}

export function paramIssues(error: z.ZodError): ParamIssue[] {
  return error.issues.flatMap((issue): ParamIssue[] => {
    const at = issue.path.map(String);
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({ path: [...at, key].join("."), message: "unknown parameter" }));
    }
    return [{ path: at.join("."), message: issue.message }];
  });
}
