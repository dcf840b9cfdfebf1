import { suite } from "uvu";
import * as assert from "uvu/assert";
import { BSON, ObjectId } from "mongodb";
import { cloneDated, fromDatedJson, toDatedJson } from "./dated-json.ts";

// What services store as one string must come back as it went in, be read the same by the
// builds before (Extended JSON), and read what those builds wrote.
const t = suite("dated JSON");

const value = () => ({
  at: new Date("2026-12-03T16:00:00.123Z"),
  list: [1, -2.5, "x", null, true, new Date(0), { end: new Date(8.64e15) }, new Date(-1)],
  nested: { n: 5_000_000_000, none: null, empty: {}, text: "a.b$c", odd: [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY] },
});

t("dates, nesting and arrays come back as they went in", () => {
  const v = value();
  const back = fromDatedJson<ReturnType<typeof value>>(toDatedJson(v));
  assert.equal(back, v);
  assert.ok(back.at instanceof Date && back.list[5] instanceof Date);
});

t("the builds before read it with Extended JSON as the same value", () => {
  assert.equal(BSON.EJSON.parse(toDatedJson(value())), value());
});

t("what the builds before wrote (relaxed Extended JSON) reads as it was", () => {
  assert.equal(fromDatedJson(BSON.EJSON.stringify(value())), value());
});

t("a key named __proto__ stays an entry, both ways", () => {
  const v = JSON.parse('{"grants": {"__proto__": {"id": "__proto__", "at": {"$date": 5}}, "b": {"id": "b"}}}') as { grants: Record<string, unknown> };
  const text = toDatedJson(v);
  const back = fromDatedJson<{ grants: Record<string, { id: string; at?: Date }> }>(text);
  assert.equal(Object.keys(back.grants), ["__proto__", "b"]);
  assert.is(Object.getPrototypeOf(back.grants), Object.prototype);
  assert.is(Object.getOwnPropertyDescriptor(back.grants, "__proto__")!.value.at.getTime(), 5);
});

t("a value that is not plain is refused rather than lost", () => {
  assert.throws(() => toDatedJson({ id: new ObjectId() }), /ObjectId/);
  assert.throws(() => toDatedJson([new Map()]), /Map/);
  assert.throws(() => cloneDated({ id: new ObjectId() }), /ObjectId/);
});

t("a copy is equal and shares nothing with what it copied, a key named __proto__ included", () => {
  const v = { ...value(), grants: JSON.parse('{"__proto__": {"id": "__proto__"}, "b": {"id": "b"}}') as Record<string, { id: string }> };
  const c = cloneDated(v);
  assert.equal(c, v);
  assert.equal(Object.keys(c.grants), ["__proto__", "b"]);
  assert.is(Object.getPrototypeOf(c.grants), Object.prototype);
  c.at.setTime(0);
  c.nested.empty = { x: 1 } as never;
  (c.list[6] as { end: Date }).end.setTime(1);
  Object.getOwnPropertyDescriptor(c.grants, "__proto__")!.value.id = "changed";
  assert.equal(v, { ...value(), grants: JSON.parse('{"__proto__": {"id": "__proto__"}, "b": {"id": "b"}}') }, "the original is as it was");
});

t.run();
