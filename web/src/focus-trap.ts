/**
 * Keeps Tab inside a modal dialog: from its last focusable element Tab goes to its first, and
 * Shift+Tab from the first to the last (WAI-ARIA dialog pattern). Put it on the dialog's onKeyDown.
 */
const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), textarea:not([disabled]), select:not([disabled]), [tabindex]:not([tabindex="-1"])';

export function trapTab(e: KeyboardEvent): void {
  if (e.key !== "Tab") return;
  const dialog = e.currentTarget as HTMLElement;
  const all = [...dialog.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((el) => el.offsetParent !== null || el === document.activeElement);
  if (all.length === 0) return;
  const first = all[0]!;
  const last = all[all.length - 1]!;
  const active = document.activeElement as HTMLElement | null;
  // Radio groups: one Tab stop for the group, so compare by group too.
  const inGroup = (a: HTMLElement | null, b: HTMLElement) => a === b || (a instanceof HTMLInputElement && a.type === "radio" && b instanceof HTMLInputElement && b.type === "radio" && a.name === b.name);
  if (e.shiftKey && (inGroup(active, first) || !dialog.contains(active))) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && (inGroup(active, last) || !dialog.contains(active))) {
    e.preventDefault();
    first.focus();
  }
}
