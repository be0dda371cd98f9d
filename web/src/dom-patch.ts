/**
 * Brings a rendered message's DOM to new sanitized content, keeping every node that is still the
 * same: a streamed delta then only appends to the last text node, instead of replacing the whole
 * message's DOM on every frame (innerHTML). Why: a reply streaming into a long message re-created,
 * re-styled and re-shaped all of its text per frame, and a reader's selection in it was lost on
 * each frame (#33). Nodes are matched by position and name; anything else is replaced.
 *
 * Our own additions inside a message are left alone: the code blocks' Copy buttons (model output
 * never holds a button: DOMPurify forbids them).
 */
export function patchChildren(into: ParentNode, from: ParentNode): void {
  let at = into.firstChild;
  let next = from.firstChild;
  while (next) {
    const after = next.nextSibling;
    at = skipOurs(at);
    if (at && at.nodeType === next.nodeType && at.nodeName === next.nodeName) {
      patchNode(at, next);
      at = at.nextSibling;
    } else {
      into.insertBefore(next, at);
    }
    next = after;
  }
  while (at) {
    const after = at.nextSibling;
    if (!isOurs(at)) at.remove();
    at = after;
  }
}

function isOurs(node: Node): boolean {
  return node.nodeName === "BUTTON";
}

function skipOurs(node: ChildNode | null): ChildNode | null {
  while (node && isOurs(node)) node = node.nextSibling;
  return node;
}

function patchNode(node: Node, from: Node): void {
  if (node.nodeType === Node.TEXT_NODE || node.nodeType === Node.COMMENT_NODE) {
    const was = (node as CharacterData).data;
    const now = (from as CharacterData).data;
    if (was === now) return;
    // A delta appends: the text node grows in place (the browser reuses what it laid out).
    if (now.startsWith(was)) (node as CharacterData).appendData(now.slice(was.length));
    else (node as CharacterData).data = now;
    return;
  }
  if (node.nodeType !== Node.ELEMENT_NODE) return;
  patchAttributes(node as Element, from as Element);
  patchChildren(node as Element, from as Element);
}

function patchAttributes(el: Element, from: Element): void {
  for (const name of el.getAttributeNames()) if (!from.hasAttribute(name)) el.removeAttribute(name);
  for (const name of from.getAttributeNames()) {
    const value = from.getAttribute(name)!;
    if (el.getAttribute(name) !== value) el.setAttribute(name, value);
  }
}
