import { benchAppends } from "./appends.js";
const r = await benchAppends({ n: Number(process.argv[2] ?? 100000), runs: 5 });
console.log(JSON.stringify(r, null, 1));
