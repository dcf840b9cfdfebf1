/** A small JSON client for the REST API, as an integrating product would use it. */
export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export class Api {
  constructor(
    readonly baseUrl: string,
    readonly key?: string,
  ) {}

  withKey(key: string | undefined): Api {
    return new Api(this.baseUrl, key);
  }

  async request<T = any>(
    method: string,
    path: string,
    opts: { body?: unknown; rawBody?: string | Uint8Array; headers?: Record<string, string> } = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (this.key) headers.authorization = `Bearer ${this.key}`;
    let body: string | Uint8Array | undefined;
    if (opts.rawBody !== undefined) {
      body = opts.rawBody;
      headers["content-type"] ??= "application/json";
    } else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] = "application/json";
    }
    const res = await fetch(this.baseUrl + path, { method, headers, body: body as BodyInit | undefined });
    const text = await res.text();
    let parsed: unknown = text;
    if (text && res.headers.get("content-type")?.includes("json")) parsed = JSON.parse(text);
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  get<T = any>(path: string, opts?: { headers?: Record<string, string> }) {
    return this.request<T>("GET", path, opts);
  }
  post<T = any>(path: string, body?: unknown, opts?: { headers?: Record<string, string> }) {
    return this.request<T>("POST", path, { ...opts, body });
  }
  patch<T = any>(path: string, body?: unknown) {
    return this.request<T>("PATCH", path, { body });
  }
  put<T = any>(path: string, body?: unknown) {
    return this.request<T>("PUT", path, { body });
  }
  delete<T = any>(path: string) {
    return this.request<T>("DELETE", path);
  }
}
