/**
 * Model output → safe HTML. Markdown by `marked`, code blocks highlighted by highlight.js core
 * with a handful of languages, and the result always passed through DOMPurify: raw HTML in model
 * output is never injected as is (scripts, handlers, `javascript:` links are removed).
 */
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { Marked, type TokenizerAndRendererExtension, type Tokens } from "marked";

hljs.registerLanguage("bash", bash);
hljs.registerLanguage("javascript", javascript);
hljs.registerLanguage("json", json);
hljs.registerLanguage("python", python);
hljs.registerLanguage("sql", sql);
hljs.registerLanguage("typescript", typescript);
hljs.registerLanguage("xml", xml);
hljs.registerLanguage("yaml", yaml);
for (const [alias, lang] of [
  ["sh", "bash"],
  ["shell", "bash"],
  ["js", "javascript"],
  ["ts", "typescript"],
  ["py", "python"],
  ["html", "xml"],
  ["yml", "yaml"],
] as const) {
  hljs.registerAliases(alias, { languageName: lang });
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/**
 * Math (`$…$`, `$$…$$`, `\(…\)` inline; `$$…$$`, `\[…\]` starting a line: a block): left as `.math`
 * elements holding the TeX as text, typeset by KaTeX once it loaded (math.ts, lazy). An inline `$`
 * needs no space inside either end and no digit right after the closing one, so prices ("$5 and
 * $10") stay text.
 */
const INLINE_MATH = /^(?:\$\$([^\n]+?)\$\$|\$(?!\s)((?:\\.|[^\\$\n])+?)(?<!\s)\$(?!\d)|\\\((.+?)\\\))/;
const BLOCK_MATH = /^(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\])[ \t]*(?:\n|$)/;

function mathExtension(name: string, level: "inline" | "block", rule: RegExp, start: RegExp): TokenizerAndRendererExtension {
  return {
    name,
    level,
    start(src: string) {
      const m = start.exec(src);
      return m ? m.index + (m[0].startsWith("\n") ? 1 : 0) : undefined;
    },
    tokenizer(src: string) {
      const m = rule.exec(src);
      if (!m) return undefined;
      return { type: name, raw: m[0], text: (m.slice(1).find((g) => g !== undefined) ?? "").trim() };
    },
    renderer(token) {
      const tex = escapeHtml(String(token["text"] ?? ""));
      return level === "block" ? `<div class="math math-display">${tex}</div>` : `<span class="math">${tex}</span>`;
    },
  };
}

const marked = new Marked({
  gfm: true,
  breaks: true,
  extensions: [mathExtension("mathBlock", "block", BLOCK_MATH, /(?:^|\n)(?:\$\$|\\\[)/), mathExtension("mathInline", "inline", INLINE_MATH, /\$|\\\(/)],
  renderer: {
    code({ text, lang }: Tokens.Code): string {
      const language = (lang ?? "").trim().split(/\s+/)[0] ?? "";
      const known = language !== "" && hljs.getLanguage(language) !== undefined;
      const body = known ? hljs.highlight(text, { language, ignoreIllegals: true }).value : escapeHtml(text);
      // The language sits in a head bar above the code (never over its first line); the page adds
      // a Copy button there (DOMPurify keeps buttons out of model output).
      const label = `<span class="code-lang">${language ? escapeHtml(language) : "code"}</span>`;
      return `<div class="code-block"><div class="code-head">${label}</div><pre class="code"><code class="hljs${known ? ` language-${escapeHtml(language)}` : ""}">${body}</code></pre></div>`;
    },
    // Raw HTML in model output is shown as text, not interpreted (DOMPurify is the second line).
    html({ text }: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(text);
    },
  },
});

const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed"],
  FORBID_ATTR: ["style"],
};

/**
 * Two sanitizers, each with its configuration set once: a configuration passed to every
 * `sanitize` call is parsed again on every call (its sets rebuilt), which showed in profiles of a
 * streaming reply and of opening a long session (#33). One returns HTML, the other nodes.
 */
function purifier(cfg: Parameters<typeof DOMPurify.setConfig>[0]): typeof DOMPurify {
  const p = DOMPurify(window);
  p.setConfig(cfg);
  p.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A") {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer nofollow");
    }
    // A code block scrolls sideways: it takes focus so a keyboard can scroll it (axe scrollable-region-focusable).
    if (node.tagName === "PRE") node.setAttribute("tabindex", "0");
  });
  return p;
}
const toHtml = purifier(PURIFY);
const toNodes = purifier({ ...PURIFY, RETURN_DOM_FRAGMENT: true });

/** Sanitized HTML for a Markdown text (safe for innerHTML). */
export function renderMarkdown(text: string): string {
  return toHtml.sanitize(marked.parse(text, { async: false }));
}

/** The same, as nodes (a streaming reply patches its DOM with them: dom-patch.ts); no second parse. */
export function renderMarkdownFragment(text: string): DocumentFragment {
  return toNodes.sanitize(marked.parse(text, { async: false })) as unknown as DocumentFragment;
}

/** Pretty JSON for tool arguments and results. */
export function prettyJson(value: unknown): string {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

export function highlightJson(value: unknown): string {
  return hljs.highlight(prettyJson(value), { language: "json", ignoreIllegals: true }).value;
}
