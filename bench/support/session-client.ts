// A lean process that times sessions for a bench: GET /users/{id}/session one at a time, each
// answer checked, as a product's server reads them when it starts serving a user. The bench that
// seeded 100k users holds hundreds of megabytes of its own; its scavenges (up to 22 ms each)
// landed in the sessions it timed, so the figures measured the bench as much as the service.
// `timeSessions` runs this file as a child process with nothing else in its heap.
//
// The calls go through undici's `Client.request` over one keep-alive connection, as load tools
// do, not through `fetch`: fetch builds WHATWG streams, a Request, Headers and a Response a call,
// and on this 2-core machine the client's garbage collections and CPU landed in the tail it timed
// (docs/benchmarks.md, "Scale"). BENCH_SESSION_CLIENT=fetch times them through fetch instead.
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Client } from "undici";
import { Api } from "../../test/support/http.ts";

/** What times the calls: undici's request API (default) or fetch, as the client library calls. */
export const SESSION_CLIENT = process.env.BENCH_SESSION_CLIENT === "fetch" ? "fetch" : "undici";

/** A stack's API as the child reaches it; `team`: every answer must carry the member's team. */
export interface SessionApi {
  baseUrl: string;
  key?: string;
  team?: boolean;
}

/** One session to time: which API (index into the apis) and which user. */
export type SessionCall = [api: number, user: string];

interface Job {
  apis: SessionApi[];
  calls: SessionCall[];
}

/** GET `path` on one API, the answer's status and parsed body. */
interface Getter {
  get(path: string): Promise<{ status: number; body: any }>;
  /** GET `/readyz` (no backend behind it) `n` times, untimed. */
  warm(n: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Calls to /readyz that the client makes on each API before it times anything: its connection
 * open and its request path compiled. Without them the first sessions a fresh client timed
 * (the "right after" phase of bench:scale is its first use) took 10-21 ms on the client's own
 * account: a new process's first calls through undici and its TCP connect.
 */
const WARM_CALLS = 50;

/**
 * The child's heap: a young generation fixed at 64 MB (a timed run of 2,000 sessions allocates
 * less) and a full collection before each run (`gc()`), so that none of the client's own
 * collections falls inside the calls it times. With V8's defaults the client scavenged every
 * 0.5-1 s, 6-18 ms each on a busy 2-core machine, and ran a mark-compact near the end of a
 * run: 6-9 of a run's 50-80 sessions over 5 ms met one (docs/benchmarks.md, "Scale").
 */
const CHILD_FLAGS = ["--expose-gc", "--min-semi-space-size=64", "--max-semi-space-size=64"];

function getter(a: SessionApi): Getter {
  if (SESSION_CLIENT === "fetch") {
    const api = new Api(a.baseUrl, a.key);
    const readyz = a.baseUrl.replace(/\/api\/v1$/, "/readyz");
    return {
      get: (path) => api.get(path),
      warm: async (n) => {
        for (let i = 0; i < n; i++) await (await fetch(readyz)).text();
      },
      close: async () => {},
    };
  }
  const base = new URL(a.baseUrl);
  const client = new Client(base.origin);
  const headers = a.key ? { authorization: `Bearer ${a.key}` } : {};
  return {
    async get(path) {
      const res = await client.request({ method: "GET", path: base.pathname + path, headers });
      return { status: res.statusCode, body: await res.body.json() };
    },
    async warm(n) {
      for (let i = 0; i < n; i++) await (await client.request({ method: "GET", path: "/readyz" })).body.json();
    },
    close: () => client.close(),
  };
}

async function run(job: Job): Promise<number[]> {
  const apis = job.apis.map((a) => ({ client: getter(a), team: a.team === true }));
  const times: number[] = [];
  try {
    for (const a of apis) await a.client.warm(WARM_CALLS);
    (globalThis as { gc?: () => void }).gc?.();
    for (const [i, user] of job.calls) {
      const { client, team } = apis[i]!;
      const t = performance.now();
      const res = await client.get(`/users/${user}/session`);
      times.push(performance.now() - t);
      if (res.status !== 200 || res.body.plan !== "pro") throw new Error(`session: ${res.status} ${JSON.stringify(res.body)}`);
      if (team && res.body.team?.plan !== "team") throw new Error(`session without its team: ${JSON.stringify(res.body)}`);
    }
    return times;
  } finally {
    await Promise.all(apis.map((a) => a.client.close()));
  }
}

let child: ChildProcess | undefined;

/** Times `calls` in order in the child process (started on first use); resolves with each call's ms. */
export function timeSessions(apis: SessionApi[], calls: SessionCall[]): Promise<number[]> {
  child ??= fork(fileURLToPath(import.meta.url), [], { execArgv: ["--import", "tsx", ...CHILD_FLAGS], env: { ...process.env, SESSION_CLIENT: "1" } });
  const c = child;
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`session client exited (${code})`));
    c.once("exit", onExit);
    c.once("message", (m: { times?: number[]; error?: string }) => {
      c.off("exit", onExit);
      if (m.error !== undefined) reject(new Error(m.error));
      else resolve(m.times!);
    });
    c.send({ apis, calls } satisfies Job);
  });
}

/** Stops the child process, if one was started. */
export function closeSessionClient(): void {
  child?.disconnect();
  child = undefined;
}

if (process.env.SESSION_CLIENT === "1" && process.send) {
  process.on("message", (job: Job) => {
    run(job).then(
      (times) => process.send!({ times }),
      (err: Error) => process.send!({ error: err.message }),
    );
  });
}
