/** Types of scripts/build.mjs, for the TypeScript callers (vitest's global setup, tests). */
export declare const ENTRY_POINTS: Record<"cli" | "index" | "client" | "protocol", string>;
export declare function isFresh(kind: "js" | "types"): boolean;
export declare function buildJs(): Promise<void>;
export declare function buildTypes(): void;
export declare function build(opts?: { js?: boolean; types?: boolean; force?: boolean }): Promise<Array<"js" | "types">>;
