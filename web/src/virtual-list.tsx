/**
 * A long transcript, virtualised (@tanstack/virtual-core): only the exchanges near the viewport
 * are in the DOM (plus a few either side), each measured as it renders, so a 2,000-message session
 * keeps a bounded DOM. Items above the viewport that change size keep what is on screen in place
 * (the virtualiser corrects the scroll position); "stick to the bottom" is the caller's (app.tsx).
 */
import { elementScroll, observeElementOffset, observeElementRect, Virtualizer, type VirtualizerOptions } from "@tanstack/virtual-core";
import type { ComponentChildren } from "preact";
import { useCallback, useLayoutEffect, useReducer, useRef, useState } from "preact/hooks";

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

const ESTIMATE = 160;
const GAP = 14;

export function VirtualList({
  scroller,
  count,
  keyOf,
  render,
}: {
  scroller: { current: HTMLElement | null };
  count: number;
  /** The same function while the exchanges are the same (a new one re-reads the options). */
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
        estimateSize: () => ESTIMATE,
        // Open at the end (where a chat starts): the first render already draws the newest
        // exchanges, not the oldest ones only to replace them a frame later.
        initialOffset: () => count * (ESTIMATE + GAP),
        overscan: 4,
        // The transcript's top padding sits above the list in the scrolling element.
        scrollMargin: 24,
        gap: GAP,
        getItemKey: keyOf,
        scrollToFn: elementScroll,
        observeElementRect,
        observeElementOffset,
        onChange: () => rerender(0),
      } satisfies Opts),
  );
  // Only when they changed: merging every option on every streamed frame showed in profiles.
  if (count !== v.options.count || keyOf !== v.options.getItemKey) v.setOptions({ ...v.options, count, getItemKey: keyOf });
  useLayoutEffect(() => v._didMount(), []);
  // On open, the newest exchange at the bottom of the viewport (where a chat starts). Keeping a
  // reader at the bottom while rows are measured is ChatView's (a ResizeObserver): reading
  // scrollHeight here forced a layout on every render, i.e. every streamed frame.
  useLayoutEffect(() => {
    v._willUpdate();
    if (first.current && count > 0) {
      first.current = false;
      v.scrollToIndex(count - 1, { align: "end" });
    }
  });
  // One ref callback for the list's life: a new one each render made Preact detach and attach
  // every row's ref on every render (the virtualiser then re-scanned and re-measured them all).
  const measure = useCallback((el: HTMLElement | null) => v.measureElement(el), []);
  const items = v.getVirtualItems();
  return (
    <div class="virtual" style={{ height: `${v.getTotalSize()}px` }} data-testid="virtual-transcript">
      {items.map((it) => (
        <div
          key={it.key as string}
          class="exchange"
          data-index={it.index}
          ref={measure}
          style={{ transform: `translateY(${it.start}px)` }}
        >
          {render(it.index)}
        </div>
      ))}
    </div>
  );
}
