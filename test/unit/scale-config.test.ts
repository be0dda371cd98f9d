/** Scale-out configuration: `--store` / `TETHER_STORE`, `--bus` / `TETHER_BUS`, and what they open. */
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config/index.js";
import { openBus } from "../../src/events/bus/index.js";
import { isPostgresUrl } from "../../src/store/index.js";
import { parsePostgresUrl } from "../../src/store/postgres/postgres-store.js";
import { redactUrl } from "../../src/cli/server.js";

describe("scale-out configuration", () => {
  it("reads TETHER_STORE and TETHER_BUS; flags win over env; unset means SQLite and the in-process bus", () => {
    const none = resolveConfig({}, {});
    expect(none.store).toBeUndefined();
    expect(none.bus).toBeUndefined();
    const env = { TETHER_STORE: "postgres://db:5432/t", TETHER_BUS: "redis://r:6379" };
    expect(resolveConfig(env, {})).toMatchObject({ store: "postgres://db:5432/t", bus: "redis://r:6379" });
    expect(resolveConfig(env, { store: "postgres://other/t", bus: "redis://other" })).toMatchObject({
      store: "postgres://other/t",
      bus: "redis://other",
    });
  });

  it("picks PostgreSQL only for postgres URLs, and keeps its own schema parameter away from the server", () => {
    expect(isPostgresUrl("postgres://u@h/db")).toBe(true);
    expect(isPostgresUrl("postgresql://u@h/db")).toBe(true);
    expect(isPostgresUrl("./data/tether.db")).toBe(false);
    expect(parsePostgresUrl("postgres://u@h:5432/db?schema=t1&sslmode=disable")).toEqual({
      connectionString: "postgres://u@h:5432/db?sslmode=disable",
      schema: "t1",
    });
  });

  it("opens the in-process bus when unset and refuses an unknown bus URL; logs never show a password", async () => {
    const bus = await openBus(undefined, { ringFrames: 10, nodeId: "n" });
    expect(bus.kind).toBe("local");
    await bus.close();
    await expect(openBus("kafka://x", { ringFrames: 10, nodeId: "n" })).rejects.toThrow(/unknown bus/);
    expect(redactUrl("postgres://u:secret@h/db")).toBe("postgres://u:***@h/db");
    expect(redactUrl("./data/tether.db")).toBe("./data/tether.db");
  });
});
