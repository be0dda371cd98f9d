/**
 * What the registry shows and what `npm install` / `npm publish` act on: the package's name (not
 * `tether`, which on npm is an unrelated DOM positioning library — `npm install -g tether`
 * installed that), its license file, where its repository, home page and issues are, and a README
 * whose images load on the npm page: absolute URLs into the published package, each of a file the
 * tarball really ships (`npm pack --dry-run`, no build, ~1 s).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const REPO = new URL("../../", import.meta.url).pathname;
const read = (p: string) => readFileSync(`${REPO}${p}`, "utf8");
const pkg = JSON.parse(read("package.json")) as {
  name: string;
  license: string;
  keywords?: string[];
  homepage?: string;
  repository?: { type: string; url: string };
  bugs?: { url: string };
  bin: Record<string, string>;
};
const readme = read("README.md");

/** The paths `npm pack` would put in the tarball (scripts skipped: nothing is built). */
function packedFiles(): string[] {
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: REPO, encoding: "utf8", maxBuffer: 64 * 2 ** 20 });
  return (JSON.parse(out) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
}

describe("the package's name and metadata", () => {
  it("is published as tether-gateway (the npm name `tether` belongs to another package); the command stays `tether`", () => {
    expect(pkg.name).toBe("tether-gateway");
    expect(pkg.bin).toEqual({ tether: "bin/tether.js" });
    expect(readme).toContain("npm install -g tether-gateway");
  });

  it("says nowhere to install `tether` from npm", () => {
    // `npm install -g tether` / `npm install tether` / `from "tether"` would all reach the other package.
    const wrong = /npm (?:install|i)(?: -g)? tether(?![-\w])|from "tether(?:\/[a-z]+)?"/;
    for (const file of ["README.md", "docs/deploy.md", "docs/architecture.md", "deploy/tether.service", "src/embed/index.ts"]) {
      expect(read(file), file).not.toMatch(wrong);
    }
  });

  it("has an MIT LICENSE file, as package.json says, and repository, homepage, bugs and keywords", () => {
    expect(pkg.license).toBe("MIT");
    const license = read("LICENSE");
    expect(license).toMatch(/^MIT License\n/);
    expect(license).toContain("Permission is hereby granted, free of charge");
    expect(pkg.repository?.type).toBe("git");
    expect(pkg.repository?.url).toMatch(/^git\+https:\/\/github\.com\/[\w.-]+\/[\w.-]+\.git$/);
    const repo = pkg.repository!.url.replace(/^git\+/, "").replace(/\.git$/, "");
    expect(pkg.homepage).toBe(`${repo}#readme`);
    expect(pkg.bugs?.url).toBe(`${repo}/issues`);
    expect(pkg.keywords?.length).toBeGreaterThanOrEqual(5);
  });

  it("links README images by absolute URL to files the package ships, so they load on the registry page", () => {
    const images = [...readme.matchAll(/!\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
    expect(images.length).toBeGreaterThan(0);
    const prefix = `https://cdn.jsdelivr.net/npm/${pkg.name}/`;
    const files = new Set(packedFiles());
    expect(files.has("LICENSE")).toBe(true);
    for (const src of images) {
      expect(src.startsWith(prefix), src).toBe(true);
      expect(files.has(src.slice(prefix.length)), `${src} is not in the tarball`).toBe(true);
    }
  });
});

describe("the workspace packages (packages/client, packages/protocol, packages/react)", () => {
  // react: the hook, with React and the SDK as peer dependencies (never a dependency of its own).
  const members = ["client", "protocol", "react"] as const;
  const manifest = (m: string) =>
    JSON.parse(read(`packages/${m}/package.json`)) as { name: string; version: string; license: string; dependencies?: object; repository?: { url: string; directory?: string }; exports: Record<string, unknown> };

  it("are npm workspaces of the root, named in the server's family, at its version, with no dependency", () => {
    expect((JSON.parse(read("package.json")) as { workspaces?: string[] }).workspaces).toEqual(members.map((m) => `packages/${m}`));
    for (const m of members) {
      const p = manifest(m);
      expect(p.name).toBe(`${pkg.name}-${m}`);
      expect(p.version).toBe((JSON.parse(read("package.json")) as { version: string }).version);
      expect(p.dependencies).toBeUndefined();
      expect(p.repository).toEqual({ ...pkg.repository, directory: `packages/${m}` });
      // Both module systems, each with its own declarations.
      expect(Object.keys(p.exports["."] as object)).toEqual(["import", "require"]);
    }
  });

  it("react: React and the SDK are peers (the app's one TetherClient and RpcError), at the SDK's version", () => {
    const react = manifest("react") as ReturnType<typeof manifest> & { peerDependencies?: Record<string, string> };
    expect(react.peerDependencies).toEqual({ react: "^18.3.0 || ^19.0.0", [`${pkg.name}-client`]: `^${manifest("client").version}` });
  });

  it("carry the root's MIT license and a README each", () => {
    for (const m of members) {
      expect(manifest(m).license).toBe("MIT");
      expect(read(`packages/${m}/LICENSE`)).toBe(read("LICENSE"));
      expect(read(`packages/${m}/README.md`)).toContain(`npm install ${pkg.name}-${m}`);
    }
  });
});

describe("deploy/tether.service", () => {
  it("runs node itself on the installed package's bin (npm and npx would not pass SIGTERM on)", () => {
    const exec = /^ExecStart=(.*)$/m.exec(read("deploy/tether.service"))?.[1];
    expect(exec).toBe(`/usr/bin/node /usr/lib/node_modules/${pkg.name}/bin/tether.js serve`);
  });
});
