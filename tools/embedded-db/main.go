// Command embedded-db runs FerretDB (MongoDB wire protocol over SQLite) for local
// use and tests, where no MongoDB server or Docker engine is available.
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
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "TCP address to listen on (port 0 picks a free port)")
	dir := flag.String("dir", "./data/db", "directory holding the SQLite files")
	watchStdin := flag.Bool("watch-stdin", true, "exit when standard input closes")
	flag.Parse()

	abs, err := filepath.Abs(*dir)
	if err != nil {
		fail(err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		fail(err)
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: *listen},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: "file:" + abs + "/",
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

	fmt.Printf("READY %s\n", f.MongoDBURI())
	<-done
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "embedded-db: %v\n", err)
	os.Exit(1)
}
