/** Which backend a store location names, decided without loading any backend. */

/** True for the locations `openStore` hands to PostgreSQL. */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}
