/**
 * A session's todo list, in memory. The revision only ever grows and only when the items really
 * change, so a client can ignore a `todo.updated` it has already seen and a model re-sending the
 * same list causes no churn.
 */
import type { TodoItem, TodoState } from "../../protocol/index.js";

export interface TodoList {
  get(): TodoState;
  /** Sets the items; bumps the revision only if the list really changed. */
  set(items: TodoItem[]): { changed: boolean; state: TodoState };
}

export function createTodoList(initial: TodoState): TodoList {
  let state: TodoState = copy(initial);
  return {
    get: () => copy(state),
    set(items) {
      const next = items.map((i) => ({ content: i.content, status: i.status }));
      if (sameItems(state.items, next)) return { changed: false, state: copy(state) };
      state = { revision: state.revision + 1, items: next };
      return { changed: true, state: copy(state) };
    },
  };
}

function sameItems(a: TodoItem[], b: TodoItem[]): boolean {
  return a.length === b.length && a.every((x, i) => x.content === b[i]!.content && x.status === b[i]!.status);
}

/** Callers get copies: nobody mutates the list behind the revision's back. */
function copy(s: TodoState): TodoState {
  return { revision: s.revision, items: s.items.map((i) => ({ ...i })) };
}
