import { randomBytes } from "node:crypto";
import type { MongoClient } from "mongodb";
import { createLogger } from "@meter/lib/logger";
import { connectMongo } from "@meter/lib/mongo";
import { startStack, type Stack, type StackOptions } from "../../cmd/stack.ts";
import type { Test } from "uvu";
import { FAST } from "../../services/webhooks/testing/instance.ts";
import { Receiver } from "../../services/webhooks/testing/receiver.ts";
import { testMongoUrl } from "./database.ts";
import { Api } from "./http.ts";

export interface TestStack extends Stack {
  /** Client without a key. */
  api: Api;
  dbPrefix: string;
  /** Registers a product and returns a client holding its key. */
  newProduct(name?: string): Promise<{ api: Api; productId: string; apiKey: string }>;
}

/** The whole service in-process (real gRPC, real HTTP) on a fresh set of test databases. */
export async function startTestStack(opts: Partial<StackOptions> = {}): Promise<TestStack> {
  const dbPrefix = `t${randomBytes(5).toString("hex")}`;
  const stack = await startStack({
    mongoUrl: await testMongoUrl(),
    dbPrefix,
    logger: createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent"),
    ...opts,
  });
  const api = new Api(stack.apiUrl);
  return {
    ...stack,
    api,
    dbPrefix,
    async newProduct(name = "Test product") {
      const res = await api.post("/products", { name });
      if (res.status !== 201) throw new Error(`creating a product failed: ${res.status} ${JSON.stringify(res.body)}`);
      return { api: api.withKey(res.body.api_key), productId: res.body.id, apiKey: res.body.api_key };
    },
  };
}

/** A suite's stack (`ctx.stack`, started with `opts`), closed after the suite. */
export function withStack<C extends { stack: TestStack }>(t: Test<C>, opts: Partial<StackOptions> = {}): void {
  t.before(async (ctx) => {
    ctx.stack = await startTestStack(opts);
  });
  t.after(async (ctx) => {
    await ctx.stack.close();
  });
}

/**
 * A suite's stack (`ctx.stack`, started with `opts`) and a client of its test database
 * (`ctx.mongo`; the stack's databases are named `<ctx.stack.dbPrefix>_<service>`).
 */
export function withTestStack<C extends { stack: TestStack; mongo: MongoClient }>(t: Test<C>, opts: Partial<StackOptions> = {}): void {
  t.before(async (ctx) => {
    ctx.stack = await startTestStack(opts);
    ctx.mongo = await connectMongo(await testMongoUrl());
  });
  t.after(async (ctx) => {
    await ctx.mongo.close();
    await ctx.stack.close();
  });
}

/** A suite's stack with webhooks sent at test pace (other services as `services` sets them), and a receiver for them (`ctx.rx`). */
export function withWebhookStack<C extends { stack: TestStack; rx: Receiver }>(t: Test<C>, services: StackOptions["services"] = {}): void {
  t.before(async (ctx) => {
    ctx.stack = await startTestStack({ services: { ...services, webhooks: FAST } });
    ctx.rx = await new Receiver().start();
  });
  t.after(async (ctx) => {
    await ctx.rx.stop();
    await ctx.stack.close();
  });
}
