/** A tiny listener set. A throwing listener is reported, and never stops the others. */
export class Listeners<T> {
  private readonly set = new Set<(value: T) => void>();

  constructor(private readonly onListenerError: (err: unknown) => void) {}

  add(listener: (value: T) => void): () => void {
    this.set.add(listener);
    return () => {
      this.set.delete(listener);
    };
  }

  emit(value: T): void {
    for (const listener of [...this.set]) {
      try {
        listener(value);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }

  clear(): void {
    this.set.clear();
  }
}
