/** Types of scripts/build-packages.mjs, for the TypeScript callers (tests). */
export declare const PACKAGES: ReadonlyArray<{ dir: string; entry: string; typesEntry: string; typeDirs: string[] }>;
export declare function packagesFresh(): boolean;
export declare function buildPackages(opts?: { force?: boolean }): Promise<boolean>;
