/**
 * PostgreSQL for tests: the machine's server (TETHER_TEST_PG_URL, default
 * postgres://postgres@127.0.0.1:5432/test). Each store gets its own schema `tether_test_<random>`,
 * dropped when the file is done, so test files and runs never see each other's rows. When the
 * server is down the suites are skipped visibly (`describe.skipIf(!pgAvailable)` + a warning).
 */
import { randomBytes } from "node:crypto";
import pg from "pg";

export const PG_URL = process.env.TETHER_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

async function probe(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export const pgAvailable = await probe();
if (!pgAvailable) console.warn(`[tether tests] PostgreSQL is not reachable at ${PG_URL}: PostgreSQL suites are SKIPPED`);

const created: string[] = [];

/** A fresh schema name; the store creates it on open. */
export function testSchema(): string {
  const name = `tether_test_${randomBytes(6).toString("hex")}`;
  created.push(name);
  return name;
}

/** A store URL for a fresh schema. */
export function pgTestUrl(schema = testSchema()): string {
  const u = new URL(PG_URL);
  u.searchParams.set("schema", schema);
  return u.toString();
}

/** Drops every schema this file created (call from afterAll). */
export async function dropTestSchemas(): Promise<void> {
  if (!pgAvailable || created.length === 0) return;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    for (const name of created.splice(0)) await client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
  } finally {
    await client.end();
  }
}

/** Runs one query in the schema of a store URL made by `pgTestUrl` (to wait on what a node wrote). */
export async function pgQuery<T = Record<string, unknown>>(storeUrl: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const schema = new URL(storeUrl).searchParams.get("schema");
  if (!schema || !/^\w+$/.test(schema)) throw new Error(`no schema in ${storeUrl}`);
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`SET search_path TO ${schema}`);
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}
