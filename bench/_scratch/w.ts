import { parentPort } from "node:worker_threads";
const x: number = 3;
parentPort!.postMessage({ x });
