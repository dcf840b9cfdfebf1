// A lean process that times sessions for a bench: GET /users/{id}/session one at a time, each
// answer checked, as a product's server reads them when it starts serving a user. The bench that
// seeded 100k users holds hundreds of megabytes of its own; its scavenges (up to 22 ms each)
// landed in the sessions it timed, so the figures measured the bench as much as the service.
// `timeSessions` runs this file as a child process with nothing else in its heap.
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Api } from "../../test/support/http.ts";

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

async function run(job: Job): Promise<number[]> {
  const apis = job.apis.map((a) => ({ api: new Api(a.baseUrl, a.key), team: a.team === true }));
  const times: number[] = [];
  for (const [i, user] of job.calls) {
    const { api, team } = apis[i]!;
    const t = performance.now();
    const res = await api.get(`/users/${user}/session`);
    times.push(performance.now() - t);
    if (res.status !== 200 || res.body.plan !== "pro") throw new Error(`session: ${res.status} ${JSON.stringify(res.body)}`);
    if (team && res.body.team?.plan !== "team") throw new Error(`session without its team: ${JSON.stringify(res.body)}`);
  }
  return times;
}

let child: ChildProcess | undefined;

/** Times `calls` in order in the child process (started on first use); resolves with each call's ms. */
export function timeSessions(apis: SessionApi[], calls: SessionCall[]): Promise<number[]> {
  child ??= fork(fileURLToPath(import.meta.url), [], { execArgv: ["--import", "tsx"], env: { ...process.env, SESSION_CLIENT: "1" } });
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
