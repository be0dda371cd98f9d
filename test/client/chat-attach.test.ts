/** `tether chat`'s `/attach PATH`: files go with the next prompt as parts; the demo model says what it got. */
import { mkdirSync, mkdtempSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mediaTypeOf } from "../../src/cli/chat-attach.js";
import { runChat } from "../../src/cli/chat.js";
import { PDF, PNG, sha256 } from "../support/attachment-fixtures.js";
import { startTestServer, type TestServer } from "../support/start-server.js";

let srv: TestServer;
let dir: string;
beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 1, apiKey: "k-attach" });
  dir = mkdtempSync(join(tmpdir(), "tether-attach-"));
  writeFileSync(join(dir, "dot.png"), PNG);
  writeFileSync(join(dir, "report.pdf"), PDF);
  writeFileSync(join(dir, "notes.log"), "line one\nline two\n");
  // A PNG under a misleading name: the bytes decide.
  writeFileSync(join(dir, "really-an-image.txt"), PNG);
  mkdirSync(join(dir, "folder"));
  // Sparse: 9 MiB by its size, nothing read to refuse it.
  writeFileSync(join(dir, "huge.bin"), "");
  truncateSync(join(dir, "huge.bin"), 9 * 1024 * 1024);
  writeFileSync(join(dir, "half.bin"), "");
  truncateSync(join(dir, "half.bin"), 400 * 1024);
});
afterAll(async () => {
  await srv.close();
});

async function chat(script: string): Promise<string> {
  const input = new PassThrough();
  const output = new PassThrough();
  let text = "";
  output.on("data", (chunk: Buffer) => (text += chunk.toString()));
  input.end(script);
  await runChat({ url: srv.wsUrl, token: "k-attach", input, output });
  return text;
}

describe("tether chat /attach", () => {
  it("sends attached files as parts with the next prompt only, and lists pending ones", async () => {
    const text = await chat(
      [`/attach`, `/attach ${join(dir, "dot.png")}`, `/attach ${join(dir, "report.pdf")}`, `/attach`, "what are these?", "/attach", "count to 2", ""].join("\n"),
    );
    expect(text).toContain("no attachments pending");
    expect(text).toContain(`attached dot.png image/png ${PNG.length} B`);
    expect(text).toContain(`attached report.pdf application/pdf ${PDF.length} B`);
    expect(text).toMatch(/pending attachments.*\n\s+dot\.png image\/png \d+ B\n\s+report\.pdf application\/pdf/);
    // The demo model describes what reached it: the same bytes (sha256), the same types.
    expect(text).toContain(
      `attachments: image/png 1\u00d71 ${PNG.length} B sha256:${sha256(PNG).slice(0, 12)}; file report.pdf application/pdf ${PDF.length} B sha256:${sha256(PDF).slice(0, 12)}`,
    );
    // Sent once: after the prompt nothing is pending, and the next turn carries none.
    const after = text.slice(text.indexOf("what are these?"));
    expect(after).toMatch(/no attachments pending[\s\S]*1 2/);
    expect(text.match(/attachments: /g)).toHaveLength(1);
  });

  it("infers the type from the bytes first, then the extension; text files go as text", async () => {
    const text = await chat([`/attach ${join(dir, "notes.log")}`, `/attach ${join(dir, "really-an-image.txt")}`, "and these?", ""].join("\n"));
    expect(text).toContain("attached notes.log text/plain 18 B");
    expect(text).toContain(`attached really-an-image.txt image/png ${PNG.length} B`);
    expect(text).toMatch(/attachments: file notes\.log text\/plain 18 B sha256:\w{12}; image\/png 1\u00d71 \d+ B/);
    const b = (s: string) => Buffer.from(s, "latin1");
    expect(mediaTypeOf(b("\xff\xd8\xff\xe0rest"), "x")).toBe("image/jpeg");
    expect(mediaTypeOf(b("GIF89a..."), "x")).toBe("image/gif");
    expect(mediaTypeOf(b("RIFF\x00\x00\x00\x00WEBPVP8 "), "x")).toBe("image/webp");
    expect(mediaTypeOf(b("%PDF-1.7"), "a.txt")).toBe("application/pdf");
    expect(mediaTypeOf(b("# title"), "a.md")).toBe("text/markdown");
    expect(mediaTypeOf(b("\x00\x01\x02"), "blob")).toBe("application/octet-stream");
  });

  it("refuses a missing file, a directory and a too-large file by name, and sends nothing", async () => {
    const text = await chat(
      [`/attach ${join(dir, "nope.pdf")}`, `/attach ${join(dir, "folder")}`, `/attach ${join(dir, "huge.bin")}`, "/attach", "count to 2", ""].join("\n"),
    );
    // The cap is for a prompt's attachments together: a second 400 KiB file does not fit beside the first.
    const two = await chat([`/attach ${join(dir, "half.bin")}`, `/attach ${join(dir, "half.bin")}`, "/attach", ""].join("\n"));
    expect(two).toContain("attached half.bin application/octet-stream 400.0 KiB");
    expect(two).toContain(`/attach: ${join(dir, "half.bin")} is 400.0 KiB (400.0 KiB already attached): one prompt's attachments are at most 700.0 KiB together`);
    expect(two.match(/^\s+half\.bin /gm)).toHaveLength(1);
    expect(text).toContain(`/attach: no such file: ${join(dir, "nope.pdf")}`);
    expect(text).toContain(`/attach: ${join(dir, "folder")} is a directory`);
    expect(text).toContain(`/attach: ${join(dir, "huge.bin")} is 9.0 MiB: one prompt's attachments are at most 700.0 KiB together`);
    expect(text).toContain("no attachments pending");
    expect(text).toContain("1 2");
    expect(text).not.toContain("attachments: ");
  });
});
