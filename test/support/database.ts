import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { MongoClient } from "mongodb";
import type { Test } from "uvu";
import { startEmbeddedDb, type EmbeddedDb } from "@meter/lib/embedded-db";
import { connectMongo } from "@meter/lib/mongo";
import { eventually } from "./eventually.ts";

/**
 * The database for tests, chosen once per run: MONGODB_URL when set; else a throwaway
 * MongoDB container when a Docker engine answers; else the embedded database in a temp dir.
 */
let pending: Promise<string> | undefined;
let cleanup: (() => Promise<void>) | undefined;

async function dockerAnswers(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await Promise.race([
      getContainerRuntimeClient(),
      new Promise((_, reject) => setTimeout(() => reject(new Error("timeout")), 5_000)),
    ]);
    return true;
  } catch {
    return false;
  }
}

async function start(): Promise<string> {
  if (process.env.MONGODB_URL) return process.env.MONGODB_URL;
  if (process.env.TEST_SKIP_CONTAINERS !== "1" && (await dockerAnswers())) {
    const { GenericContainer, Wait } = await import("testcontainers");
    const container = await new GenericContainer("mongo:7")
      .withExposedPorts(27017)
      .withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))
      .start();
    cleanup = async () => void (await container.stop());
    return `mongodb://${container.getHost()}:${container.getMappedPort(27017)}/`;
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), "meter-test-db-"));
  const db: EmbeddedDb = await startEmbeddedDb(dir);
  cleanup = async () => {
    await db.stop();
    await rm(dir, { recursive: true, force: true });
  };
  return db.url;
}

export function testMongoUrl(): Promise<string> {
  pending ??= start();
  return pending;
}

export async function stopTestDatabase(): Promise<void> {
  await cleanup?.();
}

/** A suite's client of the test database (`ctx.mongo`, at `ctx.url`), opened before its tests and closed after. */
export function withTestMongo<C extends { mongo: MongoClient; url: string }>(t: Test<C>): void {
  t.before(async (ctx) => {
    ctx.url = await testMongoUrl();
    ctx.mongo = await connectMongo(ctx.url);
  });
  t.after(async (ctx) => {
    await ctx.mongo.close();
  });
}

/** A database name no other test or run uses. */
export const freshDbName = (prefix: string): string => `${prefix}_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;

/**
 * A client of the test database that can be closed once idle (`closeIdle`): a service stopped
 * before its client closes may still have a last write of a background run in flight (a job's
 * completion, an attempt past its stop's grace), and a close under it rejects that write where
 * nobody awaits it, ending the test worker. Connections checked out and not back are counted.
 */
export async function connectTestMongo(): Promise<MongoClient & { closeIdle(): Promise<void> }> {
  const client = await connectMongo(await testMongoUrl());
  let out = 0;
  client.on("connectionCheckedOut", () => out++);
  client.on("connectionCheckedIn", () => out--);
  return Object.assign(client, {
    async closeIdle() {
      // Waits for what is in flight to come back (a positive signal), for at most 10 s.
      await eventually(() => out <= 0, 10_000, "the client's operations in flight").catch(() => {});
      await client.close();
    },
  });
}
