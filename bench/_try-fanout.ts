import { benchFanout } from "./fanout.js";
const [v, n, t] = process.argv.slice(2).map(Number);
const r = await benchFanout([{ viewers: v!, countTo: n!, turns: t! }], 2);
console.log(JSON.stringify(r, null, 1));
process.exit(0);
