/** Opaque pagination cursors: base64url JSON, so a client never builds one by hand. */
export interface ActivityCursor {
  at: number;
  id: string;
}

export function encodeCursor(c: ActivityCursor): string {
  return Buffer.from(JSON.stringify(c)).toString("base64url");
}

/** Returns null for a missing cursor; throws RangeError for a malformed one. */
export function decodeCursor(text: string | undefined): ActivityCursor | null {
  if (text === undefined || text === "") return null;
  try {
    const v = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as ActivityCursor;
    if (typeof v.at === "number" && typeof v.id === "string") return v;
  } catch {
    // fall through
  }
  throw new RangeError("malformed cursor");
}
