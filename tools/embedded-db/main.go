// Command embedded-db runs FerretDB (MongoDB wire protocol over SQLite) for local
// use and tests, where no MongoDB server or Docker engine is available. Clients reach it
// through a proxy that serializes write commands (see serialize.go).
//
// It prints one line "READY <mongodb-uri>" on stdout once it accepts connections,
// and exits when its standard input closes, so it never outlives the process that
// started it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "TCP address to listen on (port 0 picks a free port)")
	dir := flag.String("dir", "./data/db", "directory holding the SQLite files")
	watchStdin := flag.Bool("watch-stdin", true, "exit when standard input closes")
	slow := flag.Duration("slow", 0, "log commands taking at least this long, e.g. 500ms (0: off)")
	walLimit := flag.Int64("wal-limit", 64<<20, "write-ahead log size (bytes) past which it is checkpointed and emptied")
	maintainEvery := flag.Duration("maintain-every", time.Second, "how often lookup indexes and log sizes are checked")
	synchronous := flag.String("synchronous", "normal", "when commits reach the disk: normal (by the next checkpoint, within about a second) or full (each commit)")
	readCacheMB := flag.Int("read-cache-mb", 64, "memory for answers of reads by _id kept by the proxy (readcache.go); 0 turns it off")
	pprofAddr := flag.String("pprof", "", "serve Go's net/http/pprof profiles on this address, e.g. 127.0.0.1:6060 (diagnostics; off when empty)")
	flag.Parse()

	if *synchronous != "normal" && *synchronous != "full" {
		fail(fmt.Errorf("-synchronous must be normal or full, not %q", *synchronous))
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fail(err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		fail(err)
	}

	// Reads by _id allocate about as much as they return, and the live heap is small, so with
	// Go's default (a collection each time the heap doubles) one ran every few hundred reads,
	// taking one of the two cores of a small machine while it marked: one read in a hundred
	// met one. At 400, reads of 10,000 documents at random from one client went from 1.66-1.73
	// to 1.16-1.30 ms at p99 (800: 1.11-1.15), for a heap up to five times the live one. A GOGC
	// in the environment still decides.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}

	if *pprofAddr != "" {
		go func() { _ = http.ListenAndServe(*pprofAddr, nil) }()
	}

	logger := slog.New(&lazyAttrs{base: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})})
	f, err := ferretdb.New(&ferretdb.Config{
		Listener: ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Logger:   logger,
		Handler:  "sqlite",
		// Checkpoints are the maintainer's (maintain.go), not a cost of every commit. With
		// synchronous=normal a commit is written to the log but not flushed to the disk until
		// the next checkpoint (every second): a crash of any process loses nothing; a power
		// loss or an operating-system crash may lose the last second, never corrupting the
		// files. That is MongoDB's default on a standalone server (journal flushed every
		// 100 ms); -synchronous full flushes every commit. Write transactions take the write
		// lock when they begin (`_txlock=immediate`): an update command's transaction reads
		// before it writes (patches/batch.go.in), and a read snapshot cannot always become a
		// writer later; the proxy runs one write command at a time, so none waits for another.
		SQLiteURL: "file:" + abs + "/?_pragma=wal_autocheckpoint(0)&_pragma=synchronous(" + *synchronous + ")&_txlock=immediate",
	})
	if err != nil {
		fail(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *watchStdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}

	done := make(chan struct{})
	go func() {
		_ = f.Run(ctx)
		close(done)
	}()

	// Clients connect through the proxy that makes single-document writes atomic and keeps
	// answers of reads by _id.
	backend, err := url.Parse(f.MongoDBURI())
	if err != nil {
		fail(err)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fail(err)
	}
	proxyLogger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	proxy := &serializingProxy{backend: backend.Host, logger: proxyLogger, slow: *slow}
	if *readCacheMB > 0 {
		proxy.cache = newReadCache(*readCacheMB << 20)
	}
	go proxy.serve(l)
	go newMaintainer(abs, proxy, proxyLogger, *walLimit).run(ctx, *maintainEvery)
	go func() {
		<-ctx.Done()
		l.Close()
	}()

	fmt.Printf("READY mongodb://%s/\n", l.Addr().String())
	<-done
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "embedded-db: %v\n", err)
	os.Exit(1)
}
