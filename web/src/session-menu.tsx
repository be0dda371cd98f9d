/**
 * A session row's ⋯ menu: rename, archive, download, close or reopen, delete. A menu in the ARIA
 * sense (arrow keys move, Esc closes and gives focus back to the row, a click elsewhere closes it).
 */
import { useLayoutEffect, useRef } from "preact/hooks";

export interface MenuItem {
  label: string;
  danger?: boolean;
  title?: string;
  run(): void;
}

export function SessionMenu({ label, items, onClose }: { label: string; items: MenuItem[]; onClose(refocus: boolean): void }) {
  const menu = useRef<HTMLDivElement>(null);
  // A layout effect: the focus and the listeners are in place before the open menu is painted, so
  // no key pressed once it shows can miss them.
  useLayoutEffect(() => {
    menu.current?.querySelector<HTMLElement>('[role="menuitem"]')?.focus();
    const away = (e: MouseEvent) => {
      if (menu.current && !menu.current.parentElement?.contains(e.target as Node)) onClose(false);
    };
    // Escape closes the open menu wherever the focus is: something else may take the focus while
    // the menu is open (the composer of a session just reopened did), and Esc then left it open.
    const escape = (e: KeyboardEvent) => {
      if (e.key !== "Escape" || e.shiftKey) return;
      e.preventDefault();
      e.stopPropagation();
      onClose(true);
    };
    document.addEventListener("mousedown", away);
    document.addEventListener("keydown", escape, true);
    return () => {
      document.removeEventListener("mousedown", away);
      document.removeEventListener("keydown", escape, true);
    };
  }, []);
  const move = (e: KeyboardEvent) => {
    const all = [...(menu.current?.querySelectorAll<HTMLElement>('[role="menuitem"]') ?? [])];
    const at = all.indexOf(document.activeElement as HTMLElement);
    let next = -1;
    if (e.key === "ArrowDown") next = (at + 1) % all.length;
    else if (e.key === "ArrowUp") next = (at - 1 + all.length) % all.length;
    else if (e.key === "Home") next = 0;
    else if (e.key === "End") next = all.length - 1;
    else if (e.key === "ArrowLeft") {
      e.preventDefault();
      e.stopPropagation();
      onClose(true);
      return;
    } else if (e.key === "Tab") {
      onClose(false);
      return;
    }
    if (next >= 0) {
      e.preventDefault();
      all[next]?.focus();
    }
  };
  return (
    <div class="session-menu" role="menu" aria-label={label} ref={menu} onKeyDown={move}>
      {items.map((it) => (
        <button
          key={it.label}
          type="button"
          role="menuitem"
          tabIndex={-1}
          class={`session-menu-item ${it.danger ? "danger" : ""}`}
          title={it.title}
          onClick={() => it.run()}
        >
          {it.label}
        </button>
      ))}
    </div>
  );
}
