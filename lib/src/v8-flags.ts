/**
 * V8 settings of every server process, imported first by each entry point (before it allocates
 * much). The module has no exports: importing it applies them.
 *
 * Allocation-site pretenuring off. V8 allocates objects straight into the old generation at an
 * allocation site whose objects survived young collections before. protobuf-es creates every
 * message at one site, so once startup and ingestion batches had kept messages alive a while,
 * every message after it went to the old generation too: a session's decoded requests and
 * answers, which live a millisecond, became garbage that only a full collection frees, and each
 * of their pointers to young objects one more root for every scavenge. Over 3,000 first
 * sessions the all-in-one process then spent 55-78 ms in scavenges instead of 24-27 ms, and its
 * old generation grew 2.9 MB a scavenge instead of 0.45 MB (docs/benchmarks.md, "Scale").
 */
import v8 from "node:v8";

v8.setFlagsFromString("--no-allocation-site-pretenuring");
