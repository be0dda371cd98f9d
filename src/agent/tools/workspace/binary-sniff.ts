/**
 * What a file that is not text looks like, for read_file's refusal: its size and, where its first
 * bytes are a well-known signature, its format. A few signatures are enough to say "a PNG image"
 * instead of "binary"; anything else is described by what made it binary.
 */
const SIGNATURES: Array<{ magic: number[]; offset?: number; name: string }> = [
  { magic: [0x89, 0x50, 0x4e, 0x47], name: "a PNG image" },
  { magic: [0xff, 0xd8, 0xff], name: "a JPEG image" },
  { magic: [0x47, 0x49, 0x46, 0x38], name: "a GIF image" },
  { magic: [0x25, 0x50, 0x44, 0x46], name: "a PDF document" },
  { magic: [0x50, 0x4b, 0x03, 0x04], name: "a ZIP archive (or a format built on one: docx, jar, …)" },
  { magic: [0x1f, 0x8b], name: "gzip-compressed data" },
  { magic: [0x28, 0xb5, 0x2f, 0xfd], name: "zstd-compressed data" },
  { magic: [0x7f, 0x45, 0x4c, 0x46], name: "an ELF executable or library" },
  { magic: [0x00, 0x61, 0x73, 0x6d], name: "a WebAssembly module" },
  { magic: [0x53, 0x51, 0x4c, 0x69, 0x74, 0x65, 0x20, 0x66], name: "an SQLite database" },
  { magic: [0x75, 0x73, 0x74, 0x61, 0x72], offset: 257, name: "a tar archive" },
];

/** `head`: the file's first bytes, or null when the problem was found further in. */
export function describeBinary(head: Buffer | null, size: number, why: string): string {
  const kind = head ? SIGNATURES.find((s) => s.magic.every((b, i) => head[(s.offset ?? 0) + i] === b))?.name : undefined;
  return `${kind ?? "binary data"}, ${size} bytes (${why})`;
}
