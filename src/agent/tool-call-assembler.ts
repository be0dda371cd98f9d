/**
 * OpenAI streams a tool call in fragments: the first carries `id` and `function.name`, later ones
 * append pieces of `function.arguments`, all keyed by `index`. The runner wants whole calls once,
 * so the provider feeds every fragment here and takes the finished list at the end.
 */
import type { ToolCall } from "../protocol/index.js";

export interface ToolCallFragment {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

interface Building {
  id: string;
  name: string;
  args: string;
}

export class ToolCallAssembler {
  private readonly calls: Building[] = [];
  /** `index` of the stream → position in `calls`. */
  private readonly byIndex = new Map<number, number>();

  add(fragment: ToolCallFragment): void {
    const index = typeof fragment.index === "number" ? fragment.index : this.calls.length;
    let pos = this.byIndex.get(index);
    const current = pos === undefined ? undefined : this.calls[pos];
    // Some servers send each call whole, all with index 0; a new id means a new call.
    if (!current || (fragment.id && current.id && fragment.id !== current.id)) {
      pos = this.calls.push({ id: fragment.id ?? "", name: "", args: "" }) - 1;
      this.byIndex.set(index, pos);
    }
    const call = this.calls[pos!]!;
    if (fragment.id && !call.id) call.id = fragment.id;
    if (fragment.function?.name) call.name += fragment.function.name;
    if (fragment.function?.arguments) call.args += fragment.function.arguments;
  }

  get size(): number {
    return this.calls.length;
  }

  /** The assembled calls; a call the server sent without an id gets a stable one. */
  finish(): ToolCall[] {
    return this.calls.map((c, i) => ({ id: c.id || `call_${i}`, name: c.name, arguments: c.args }));
  }
}
