// The package exports exactly what README.md's "What the package exports" lists: every entry
// point of package.json, its values and its types, read from the sources by the TypeScript
// compiler. A name exported but not documented (or documented but gone) fails here.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { suite } from "uvu";
import * as assert from "uvu/assert";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const t = suite("sdk: public exports = the README's list");

interface Documented {
  values: string[];
  types: string[];
}

/** The README's table: entry point → the names it documents. */
function documented(): Map<string, Documented> {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const start = readme.indexOf("### What the package exports");
  assert.ok(start >= 0, "README.md has a section 'What the package exports'");
  const rows = readme.slice(start).split("\n").filter((l) => /^\| `meterline/.test(l));
  const names = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).sort();
  return new Map(rows.map((row) => {
    const [, entry, values, types] = row.split("|").map((c) => c.trim());
    return [entry!.replaceAll("`", ""), { values: names(values!), types: names(types!) }];
  }));
}

/** package.json's entry points, as source files: "./openai" → src/integrations/openai.ts. */
function entryPoints(): Map<string, string> {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const out = new Map<string, string>();
  for (const [sub, target] of Object.entries<any>(pkg.exports)) {
    if (typeof target === "string") continue; // ./package.json
    const file = target.import.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts");
    out.set(sub === "." ? "meterline" : `meterline/${sub.slice(2)}`, join(root, file));
  }
  return out;
}

t("every entry point exports the values and types the README lists, and nothing else", () => {
  const docs = documented();
  const entries = entryPoints();
  assert.equal([...docs.keys()].sort(), [...entries.keys()].sort(), "the README lists every entry point of package.json");
  const program = ts.createProgram([...entries.values()], {
    allowImportingTsExtensions: true,
    noEmit: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    skipLibCheck: true,
  });
  const checker = program.getTypeChecker();
  for (const [entry, file] of entries) {
    const source = program.getSourceFile(file);
    assert.ok(source, `${file} is compiled`);
    const values: string[] = [];
    const types: string[] = [];
    for (const symbol of checker.getExportsOfModule(checker.getSymbolAtLocation(source!)!)) {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      // A class is both; it is listed as a value. `export type { X }` of a class is a type only.
      const typeOnly = target.declarations?.every((d) => ts.isTypeOnlyImportOrExportDeclaration(d)) || symbol.declarations?.some((d) => ts.isTypeOnlyImportOrExportDeclaration(d as never));
      (target.flags & ts.SymbolFlags.Value && !typeOnly ? values : types).push(symbol.name);
    }
    assert.equal(values.sort(), docs.get(entry)!.values, `${entry}: values`);
    assert.equal(types.sort(), docs.get(entry)!.types, `${entry}: types`);
  }
});

t("the runtime values of each entry point are the documented ones", async () => {
  const docs = documented();
  for (const [entry, file] of entryPoints()) {
    const mod = await import(file);
    assert.equal(Object.keys(mod).sort(), docs.get(entry)!.values, `${entry}: runtime exports`);
  }
});

t("Meter and Reservation carry exactly the methods the README's API table documents, and no state of their own in sight", async () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const table = readme.slice(readme.indexOf("## API"), readme.indexOf("### Errors"));
  const documented = (prefix: string) => [...new Set([...table.matchAll(new RegExp(`\\b${prefix}\\.(\\w+)`, "g"))].map((m) => m[1]!))].sort();
  const { Meter, Reservation } = await import(join(root, "src/index.ts"));
  const methods = (cls: { prototype: object }) => Object.getOwnPropertyNames(cls.prototype).filter((n) => n !== "constructor").sort();
  assert.equal(methods(Meter), documented("meter"), "Meter's methods");
  assert.equal(methods(Reservation), documented("reservation"), "Reservation's methods");
  const meter = new Meter({ apiKey: "k", baseURL: "http://127.0.0.1:9/api/v1" });
  try {
    assert.equal(Object.keys(meter), [], "a Meter's state is private");
  } finally {
    await meter.shutdown({ timeoutMs: 1 });
  }
});

t.run();
