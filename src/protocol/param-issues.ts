/**
 * What is wrong with a request's params, one entry per field: the path of the field and why. An
 * unknown field is named by its own path (`foo`, `client_tools.0.colour`) — a request parameter is
 * never silently dropped, so the client learns which one Tether does not take.
 */
import type * as z from "zod";

export interface ParamIssue {
  /** Dotted path of the field; empty for the params as a whole. */
  path: string;
  message: string;
}

/** The message of an unknown field's issue. */
export const UNKNOWN_KEY = "unknown parameter";

export function paramIssues(error: z.ZodError): ParamIssue[] {
  return issuesOf(error.issues, []);
}

/**
 * A union (`content: string | parts[]`) that fails in every branch names the field only; when
 * exactly one branch took the value's type (the others failed on the type itself), its issues say
 * what is wrong inside it, and are reported instead.
 */
function issuesOf(issues: readonly z.core.$ZodIssue[], prefix: PropertyKey[]): ParamIssue[] {
  return issues.flatMap((issue): ParamIssue[] => {
    const at = [...prefix, ...issue.path].map(String);
    if (issue.code === "unrecognized_keys") {
      return issue.keys.map((key) => ({ path: [...at, key].join("."), message: UNKNOWN_KEY }));
    }
    if (issue.code === "invalid_union" && issue.errors.length > 0) {
      const typed = issue.errors.filter((branch) => !(branch.length === 1 && branch[0]!.code === "invalid_type" && branch[0]!.path.length === 0));
      if (typed.length === 1) return issuesOf(typed[0]!, [...prefix, ...issue.path]);
    }
    return [{ path: at.join("."), message: issue.message }];
  });
}
