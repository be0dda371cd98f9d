/** Which bus a location names, decided without loading Redis' client. */

export function isRedisUrl(location: string): boolean {
  return /^rediss?:\/\//i.test(location);
}
