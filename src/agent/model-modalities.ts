/**
 * Which parts a model takes besides text: config `models.modalities` by name (a trailing `*` is a
 * prefix), else its family's default. A model of no known family takes text only — an attachment
 * sent to it is refused by name (4113) rather than dropped, and the config can say otherwise.
 */
import type { AttachmentKind } from "../protocol/index.js";

export type Modality = "text" | AttachmentKind;

const ALL: readonly Modality[] = ["text", "image", "file", "audio"];
const VISION_DOCS: readonly Modality[] = ["text", "image", "file"];
const VISION: readonly Modality[] = ["text", "image"];

/** Families by name pattern, first match wins (lower-case, any `provider/` prefix removed). */
const FAMILIES: ReadonlyArray<[RegExp, readonly Modality[]]> = [
  [/^demo$/, ALL],
  [/audio|realtime/, ["text", "audio"]],
  [/^gpt-4o|^gpt-4\.1|^gpt-4\.5|^gpt-5|^o[134](-|$)|^chatgpt-4o/, VISION_DOCS],
  [/^claude-(3|sonnet|opus|haiku)|^claude-[4-9]/, VISION_DOCS],
  [/^gemini/, ALL],
  [/llava|vision|-vl\b|-vl-|pixtral|gemma-?3|llama-?4|minicpm-v|moondream|qwen2\.5-vl|qwen-vl/, VISION],
];

/** What `model` takes: `configured` (config `models.modalities`) first, then the family default. */
export function modalitiesOf(model: string, configured: Readonly<Record<string, readonly Modality[]>> = {}): readonly Modality[] {
  const exact = configured[model];
  if (exact) return exact;
  let best: { len: number; mods: readonly Modality[] } | undefined;
  for (const [pattern, mods] of Object.entries(configured)) {
    if (!pattern.endsWith("*")) continue;
    const prefix = pattern.slice(0, -1);
    if (model.startsWith(prefix) && (!best || prefix.length > best.len)) best = { len: prefix.length, mods };
  }
  if (best) return best.mods;
  const name = model.toLowerCase().replace(/^.*\//, "");
  for (const [re, mods] of FAMILIES) if (re.test(name)) return mods;
  return ["text"];
}
