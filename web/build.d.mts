/** Types of web/build.mjs, for TypeScript callers (tests). */
export declare function webBuildIsFresh(): boolean;
export declare function buildWeb(opts?: { force?: boolean; quiet?: boolean }): Promise<boolean>;
