// The live heap of a process started with `--inspect=127.0.0.1:<port>`, through the DevTools
// protocol: heap used right after a full collection, the figure that tells a leak from garbage
// not yet collected (V8 collects lazily, also when idle, so `/metrics`' heap used mostly
// follows the allocation rate).

export class HeapInspector {
  private next = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(private readonly ws: WebSocket) {
    ws.addEventListener("message", (m) => {
      const msg = JSON.parse(String(m.data)) as { id?: number; result?: unknown; error?: { message: string } };
      const p = msg.id === undefined ? undefined : this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id!);
      if (msg.error) p.reject(new Error(msg.error.message));
      else p.resolve(msg.result);
    });
    ws.addEventListener("close", () => {
      for (const p of this.pending.values()) p.reject(new Error("inspector connection closed"));
      this.pending.clear();
    });
  }

  /** Connects to the inspector listening on `port` (retrying while the process starts). */
  static async connect(port: number): Promise<HeapInspector> {
    for (let attempt = 0; ; attempt++) {
      try {
        const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
        const ws = new WebSocket(targets[0]!.webSocketDebuggerUrl);
        await new Promise<void>((resolve, reject) => {
          ws.addEventListener("open", () => resolve(), { once: true });
          ws.addEventListener("error", () => reject(new Error("inspector connection failed")), { once: true });
        });
        return new HeapInspector(ws);
      } catch (err) {
        if (attempt >= 50) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  private call<T>(method: string, params: object = {}): Promise<T> {
    const id = ++this.next;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Bytes of heap in use after a full, compacting collection. */
  async heapAfterGc(): Promise<number> {
    await this.call("HeapProfiler.enable");
    await this.call("HeapProfiler.collectGarbage");
    return (await this.call<{ usedSize: number }>("Runtime.getHeapUsage")).usedSize;
  }

  close(): void {
    this.ws.close();
  }
}
