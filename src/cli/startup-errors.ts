/**
 * What stops a gateway from starting, said in one line: the store or the bus that could not be
 * opened, where (passwords masked), and the driver's own reason — never a stack trace. `tether
 * serve` prints `tether: <message>` and exits 1; an embedding application gets the error (with the
 * driver's error as `cause`).
 *
 *   const store = await opening("store", location, () => openStore(location));
 */
export class StartupError extends Error {
  override name = "StartupError";
}

type Part = "store" | "bus";

const WHAT: Record<Part, string> = { store: "cannot open the store", bus: "cannot connect to the bus" };

/** Runs `open`; its failure becomes a StartupError naming the part and its (redacted) location. */
export async function opening<T>(part: Part, location: string, open: () => Promise<T>, firstError?: () => unknown): Promise<T> {
  try {
    return await open();
  } catch (err) {
    // ioredis rejects with "Connection is closed." once it gave up; the reason came before it.
    const reason = firstError?.() ?? err;
    throw new StartupError(`${WHAT[part]} ${redactLocation(location)}: ${reasonOf(reason)}${hintFor(reason)}`, { cause: err });
  }
}

/** What to check, where the driver's words alone leave it open. */
function hintFor(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === "SQLITE_CANTOPEN") return " (its folder must exist or be creatable, and be writable by this user)";
  if (code === "ECONNREFUSED") return " (is the server running, and listening there?)";
  return "";
}

/** The driver's reason in a few words: its message, else its code; an AggregateError's first ones. */
export function reasonOf(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0 && !err.message) {
    return [...new Set(err.errors.map(reasonOf))].join("; ");
  }
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    const text = err.message.split("\n")[0]!.trim();
    if (text !== "") return text;
    return code ?? err.name;
  }
  return String(err);
}

/** A store or bus location for messages and logs: a URL's password is never printed. */
export function redactLocation(location: string): string {
  try {
    const u = new URL(location);
    if (u.password) u.password = "***";
    return u.protocol.length > 2 ? u.toString() : location;
  } catch {
    return location;
  }
}
