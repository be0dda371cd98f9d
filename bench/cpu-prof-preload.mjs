/**
 * `--cpu-prof` for nodes the scale bench spawns: Node 20 refuses `--cpu-prof` in NODE_OPTIONS, so
 *   TETHER_BENCH_NODE_OPTIONS="--import ./bench/cpu-prof-preload.mjs" TETHER_BENCH_PROF_DIR=/tmp/prof
 * profiles each node through the inspector and writes `<dir>/<store>-<pid>.cpuprofile` at exit
 * (the node's SIGTERM exit included). `<store>` is `sqlite`, `pg` or `pg-redis`, from its arguments.
 */
import { Session } from "node:inspector";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const dir = resolve(process.env.TETHER_BENCH_PROF_DIR ?? ".");
const args = process.argv.join(" ");
const kind = args.includes("--bus") ? "pg-redis" : args.includes("--store") ? "pg" : "sqlite";
const session = new Session();
session.connect();
session.post("Profiler.enable");
session.post("Profiler.setSamplingInterval", { interval: 200 });
session.post("Profiler.start");
// A session on the main thread answers synchronously, so this works in an exit handler.
process.on("exit", () => {
  session.post("Profiler.stop", (err, res) => {
    if (!err) writeFileSync(join(dir, `${kind}-${process.pid}.cpuprofile`), JSON.stringify(res.profile));
  });
});
