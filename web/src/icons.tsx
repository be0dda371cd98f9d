/**
 * Icons from Lucide (the `lucide` package's icon nodes, drawn here as SVG: no glyphs that change
 * with the font). Always decorative: the button or text beside one carries the name.
 */
import {
  ArrowDown,
  ArrowLeftRight,
  Check,
  ChevronLeft,
  ChevronDown,
  ChevronRight,
  CircleDashed,
  CornerDownLeft,
  Ellipsis,
  Folder,
  Lock,
  Menu,
  Paperclip,
  Pencil,
  Plus,
  Settings,
  Square,
  Wrench,
  X,
  type IconNode,
} from "lucide";

const ICONS = {
  more: Ellipsis,
  plus: Plus,
  menu: Menu,
  settings: Settings,
  check: Check,
  progress: CircleDashed,
  down: ArrowDown,
  prev: ChevronLeft,
  next: ChevronRight,
  stop: Square,
  tool: Wrench,
  folder: Folder,
  attach: Paperclip,
  close: X,
  lock: Lock,
  review: Pencil,
  delegate: ArrowLeftRight,
  result: CornerDownLeft,
  caret: ChevronDown,
} satisfies Record<string, IconNode>;

export type IconName = keyof typeof ICONS;

export function Icon({ name, size = 16 }: { name: IconName; size?: number }) {
  return (
    <svg
      class="icon"
      width={size}
      height={size}
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      stroke-width="2"
      stroke-linecap="round"
      stroke-linejoin="round"
      aria-hidden="true"
      focusable="false"
    >
      {ICONS[name].map(([tag, attrs], n) => {
        const Tag = tag as "path";
        return <Tag key={n} {...(attrs as Record<string, string>)} />;
      })}
    </svg>
  );
}
