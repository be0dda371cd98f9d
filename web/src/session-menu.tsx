/**
 * A session row's ⋯ menu: rename, archive, download, close or reopen, delete. A menu in the ARIA
 * sense (arrow keys move, Esc closes and gives focus back to the row, a click elsewhere closes it).
 */
import { useEffect, useRef } from "preact/hooks";

export interface MenuItem {
  label: string;
  danger?: boolean;
  title?: string;
  run(): void;
}

export function SessionMenu({ label, items, onClose }: { label: string; items: MenuItem[]; onClose(refocus: boolean): void }) {
  const menu = useRef<HTMLDivElement>(null);
  useEffect(() => {
    menu.current?.querySelector<HTMLElement>('[role="menuitem"]')?.focus();
    const away = (e: MouseEvent) => {
      if (menu.current && !menu.current.parentElement?.contains(e.target as Node)) onClose(false);
    };
    document.addEventListener("mousedown", away);
    return () => document.removeEventListener("mousedown", away);
  }, []);
  const move = (e: KeyboardEvent) => {
    const all = [...(menu.current?.querySelectorAll<HTMLElement>('[role="menuitem"]') ?? [])];
    const at = all.indexOf(document.activeElement as HTMLElement);
    let next = -1;
    if (e.key === "ArrowDown") next = (at + 1) % all.length;
    else if (e.key === "ArrowUp") next = (at - 1 + all.length) % all.length;
    else if (e.key === "Home") next = 0;
    else if (e.key === "End") next = all.length - 1;
    else if (e.key === "Escape" || e.key === "ArrowLeft") {
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
