/** Types of build.mjs, for the tests that build the web client before opening it. */
export function webBuildIsFresh(): boolean;
export function buildWeb(options?: { force?: boolean; quiet?: boolean }): Promise<boolean>;
