package main

// The patched copy of FerretDB (lib/src/embedded-db.ts, PATCHES) imports these modules; they are
// imported here too so that go.mod and go.sum keep them.
import _ "github.com/goccy/go-json"
