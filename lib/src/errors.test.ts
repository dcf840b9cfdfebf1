import { test } from "uvu";
import * as assert from "uvu/assert";
import { MongoBulkWriteError, MongoNetworkError, MongoServerError, MongoServerSelectionError } from "mongodb";
import { Code, ConnectError, fromPeerError, isDatabaseUnreachable, toRpcError } from "./errors.ts";

test("driver errors that mean the database is unreachable leave a service as unavailable", () => {
  const unreachable = [
    new MongoNetworkError("read ECONNRESET"),
    new MongoServerSelectionError("connect ECONNREFUSED 127.0.0.1:1", { type: "Unknown", servers: new Map() } as never),
    new MongoBulkWriteError(new MongoNetworkError("read ECONNRESET") as never, {} as never),
    // What the driver let through when the database died under a write (seen in a shutdown test).
    Object.assign(new Error("This socket has been ended by the other party"), { code: "EPIPE" }),
  ];
  for (const err of unreachable) {
    assert.ok(isDatabaseUnreachable(err), err.name);
    assert.is(toRpcError(err).code, Code.Unavailable, err.name);
  }
});

test("other failures stay what they are: a refused write is a bug's 500, a ConnectError keeps its code", () => {
  const refused = new MongoServerError({ message: "Document failed validation", code: 121 });
  assert.not.ok(isDatabaseUnreachable(refused));
  assert.is(toRpcError(refused).code, Code.Unknown);
  assert.is(toRpcError(new Error("bug")).code, Code.Unknown);
  const notFound = new ConnectError("no such user", Code.NotFound);
  assert.is(toRpcError(notFound), notFound);
});

test("a broken connection to a peer is unavailable to its caller; the peer's own answers are kept", () => {
  const reset = new ConnectError("read ECONNRESET", Code.Aborted, undefined, undefined, Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }));
  assert.is((fromPeerError(reset, false) as ConnectError).code, Code.Unavailable);
  const rst = new ConnectError("http/2 stream closed with error code CANCEL (0x8)", Code.Canceled);
  assert.is((fromPeerError(rst, false) as ConnectError).code, Code.Unavailable);
  // The caller's own cancellation stays a cancellation.
  assert.is((fromPeerError(rst, true) as ConnectError).code, Code.Canceled);
  const answered = new ConnectError("plan not found", Code.NotFound);
  assert.is(fromPeerError(answered, false), answered);
});

test.run();
