/** Shared by the benchmarks that spawn `tether serve`: its listening line, read once. */
import type { ChildProcess } from "node:child_process";

/** Resolves with the URL `tether serve` prints once it listens; rejects if it exits first. */
export function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let buf = "";
    child.stdout!.on("data", (d: Buffer) => {
      buf += d.toString();
      const m = /tether listening on (http:\/\/\S+)/.exec(buf);
      if (m) resolve(m[1]!);
    });
    child.once("exit", (code) => reject(new Error(`tether serve exited (${code}) before listening`)));
  });
}
