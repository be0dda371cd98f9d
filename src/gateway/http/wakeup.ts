/**
 * The consumer side of a frame queue: one waiter, woken by `wake()` (a frame arrived, the queue
 * closed) or by its AbortSignal (the client went away).
 */
export class Wakeup {
  private pending: (() => void) | null = null;

  wait(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        this.pending = null;
        signal?.removeEventListener("abort", done);
        resolve();
      };
      this.pending = done;
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  wake(): void {
    this.pending?.();
  }
}
