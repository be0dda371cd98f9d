/**
 * A long transcript, virtualised (@tanstack/virtual-core): only the exchanges near the viewport
 * are in the DOM (plus a few either side), each measured as it renders, so a 2,000-message session
 * keeps a bounded DOM. Items above the viewport that change size keep what is on screen in place
 * (the virtualiser corrects the scroll position); "stick to the bottom" is the caller's (app.tsx).
 */
import { elementScroll, observeElementOffset, observeElementRect, Virtualizer, type VirtualizerOptions } from "@tanstack/virtual-core";
import type { ComponentChildren } from "preact";
import { useLayoutEffect, useReducer, useRef, useState } from "preact/hooks";

/**
 * Fewer exchanges than this render flat (every one in the DOM): find-in-page then sees them all.
 * `tether.bench.flat` in localStorage renders every session flat: the web bench's baseline.
 */
export const VIRTUAL_FROM = (() => {
  try {
    return window.localStorage.getItem("tether.bench.flat") ? Number.POSITIVE_INFINITY : 80;
  } catch {
    return 80;
  }
})();

type Opts = VirtualizerOptions<HTMLElement, HTMLElement>;

export function VirtualList({
  scroller,
  count,
  keyOf,
  render,
}: {
  scroller: { current: HTMLElement | null };
  count: number;
  keyOf(index: number): string;
  render(index: number): ComponentChildren;
}) {
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const first = useRef(true);
  const [v] = useState(
    () =>
      new Virtualizer<HTMLElement, HTMLElement>({
        count,
        getScrollElement: () => scroller.current,
        estimateSize: () => 160,
        overscan: 4,
        // The transcript's top padding sits above the list in the scrolling element.
        scrollMargin: 24,
        gap: 14,
        getItemKey: keyOf,
        scrollToFn: elementScroll,
        observeElementRect,
        observeElementOffset,
        onChange: () => rerender(0),
      } satisfies Opts),
  );
  v.setOptions({ ...v.options, count, getItemKey: keyOf });
  useLayoutEffect(() => v._didMount(), []);
  // On open, the newest exchange at the bottom of the viewport (where a chat starts).
  useLayoutEffect(() => {
    v._willUpdate();
    if (first.current && count > 0) {
      first.current = false;
      v.scrollToIndex(count - 1, { align: "end" });
    }
    // Measuring changes the list's height: a reader at the bottom stays there (app.tsx marks it).
    const el = scroller.current;
    if (el && el.dataset["stick"] !== "0") el.scrollTop = el.scrollHeight;
  });
  const items = v.getVirtualItems();
  return (
    <div class="virtual" style={{ height: `${v.getTotalSize()}px` }} data-testid="virtual-transcript">
      {items.map((it) => (
        <div
          key={it.key as string}
          class="exchange"
          data-index={it.index}
          ref={(el) => {
            if (el) v.measureElement(el);
          }}
          style={{ transform: `translateY(${it.start}px)` }}
        >
          {render(it.index)}
        </div>
      ))}
    </div>
  );
}
