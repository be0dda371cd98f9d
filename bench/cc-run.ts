import { benchConcurrency } from "./concurrency.js";
const r = await benchConcurrency({ sessions: [Number(process.env.N ?? 100)], deltas: 150 });
console.log(process.cwd().slice(-8), JSON.stringify(r.rows));
process.exit(0);
