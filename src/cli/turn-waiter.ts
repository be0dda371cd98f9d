/**
 * Waits for a turn to end. A turn's last frame can arrive before the `prompt.submit` answer
 * that names it, so endings are remembered, not just awaited.
 */
export class TurnWaiter {
  private readonly ended = new Set<string>();
  private readonly waiters = new Map<string, Array<() => void>>();

  settle(turnId: string): void {
    this.ended.add(turnId);
    const list = this.waiters.get(turnId) ?? [];
    this.waiters.delete(turnId);
    for (const resolve of list) resolve();
  }

  wait(turnId: string): Promise<void> {
    if (this.ended.has(turnId)) return Promise.resolve();
    return new Promise((resolve) => {
      const list = this.waiters.get(turnId) ?? [];
      list.push(resolve);
      this.waiters.set(turnId, list);
    });
  }

  /** Releases every waiter (the session was switched or is gone: its turns will not be seen). */
  releaseAll(): void {
    for (const turnId of [...this.waiters.keys()]) this.settle(turnId);
  }
}
