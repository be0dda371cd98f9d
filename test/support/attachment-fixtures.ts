/** A 1×1 PNG and a small PDF, as tests of attachments send them. */
import { createHash } from "node:crypto";

export const PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
export const PNG = Buffer.from(PNG_B64, "base64");
export const PDF = Buffer.from("%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n");
export const PDF_B64 = PDF.toString("base64");

export function sha256(b: Buffer): string {
  return createHash("sha256").update(b).digest("hex");
}
