/**
 * Pixel size from an image's header (PNG, GIF, JPEG, WebP), without decoding it: what a transcript
 * and the demo provider show ("image/png 1×1"). Null for anything else or a header cut short.
 */
/** The media type of PNG, JPEG, GIF and WebP bytes, by their signature; null for anything else. */
export function imageMediaType(b: Uint8Array): string | null {
  const at = (i: number, s: string) => b.length >= i + s.length && s.split("").every((c, k) => b[i + k] === c.charCodeAt(0));
  if (b[0] === 0x89 && at(1, "PNG")) return "image/png";
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "image/jpeg";
  if (at(0, "GIF8")) return "image/gif";
  if (at(0, "RIFF") && at(8, "WEBP")) return "image/webp";
  return null;
}

export function imageSize(b: Uint8Array): { width: number; height: number } | null {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const at = (i: number, s: string) => s.split("").every((c, k) => b[i + k] === c.charCodeAt(0));
  if (b.length >= 24 && b[0] === 0x89 && at(1, "PNG")) return { width: v.getUint32(16), height: v.getUint32(20) };
  if (b.length >= 10 && at(0, "GIF8")) return { width: v.getUint16(6, true), height: v.getUint16(8, true) };
  if (b.length >= 30 && at(0, "RIFF") && at(8, "WEBP")) return webpSize(b, v);
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) return jpegSize(b, v);
  return null;
}

function webpSize(b: Uint8Array, v: DataView): { width: number; height: number } | null {
  if (at4(b, 12, "VP8X")) return { width: 1 + (b[24]! | (b[25]! << 8) | (b[26]! << 16)), height: 1 + (b[27]! | (b[28]! << 8) | (b[29]! << 16)) };
  if (at4(b, 12, "VP8 ")) return { width: v.getUint16(26, true) & 0x3fff, height: v.getUint16(28, true) & 0x3fff };
  if (at4(b, 12, "VP8L")) {
    const bits = v.getUint32(21, true);
    return { width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
  }
  return null;
}

function at4(b: Uint8Array, i: number, s: string): boolean {
  return b[i] === s.charCodeAt(0) && b[i + 1] === s.charCodeAt(1) && b[i + 2] === s.charCodeAt(2) && b[i + 3] === s.charCodeAt(3);
}

/** Walks the JPEG markers to the first start-of-frame (SOF0–SOF15 but DHT, JPG, DAC). */
function jpegSize(b: Uint8Array, v: DataView): { width: number; height: number } | null {
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return null;
    const marker = b[i + 1]!;
    const len = v.getUint16(i + 2);
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: v.getUint16(i + 5), width: v.getUint16(i + 7) };
    }
    i += 2 + len;
  }
  return null;
}
