/**
 * KaTeX, loaded on first use (a dynamic import: its ~270 KB and its fonts stay out of the page's
 * entry bundle — test/web/bundle.test.ts holds that budget). markdown.ts leaves each formula as a
 * `.math` element carrying its TeX as text; this typesets them in place. `trust: false` (KaTeX's
 * default, said here on purpose): model output cannot make links, classes or styles through
 * `\href`, `\htmlClass` and the like; a formula KaTeX cannot read stays as its TeX, marked.
 */
import katex from "katex";
import "katex/dist/katex.min.css";

/** Typesets every `.math` element under `root` not typeset yet. */
export function typesetMath(root: HTMLElement): void {
  for (const el of root.querySelectorAll<HTMLElement>(".math:not([data-typeset])")) {
    const tex = el.textContent ?? "";
    try {
      katex.render(tex, el, { displayMode: el.classList.contains("math-display"), throwOnError: true, trust: false, output: "htmlAndMathml" });
    } catch {
      el.classList.add("math-error");
      el.title = "This formula could not be typeset";
    }
    el.dataset["typeset"] = "1";
  }
}
