package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite"
)

// FerretDB v1 keeps each collection in an SQLite table of JSON documents and looks documents
// up by _id with `WHERE _ferretdb_sjson->'$._id' = ?`, but its own _id index is built on the
// expression `_ferretdb_sjson->"_id"`. SQLite matches index expressions by their text, so
// that index is never used: every find, update and delete by _id read the whole table (a
// lookup took 230 ms at 20,000 documents, growing with the table). The maintainer gives every
// collection table a unique index on exactly the expression the lookups use, and drops
// FerretDB's, in one transaction: uniqueness of _id never lapses (FerretDB reports any unique
// violation of an insert as a duplicate _id), and inserts still maintain a single _id index.
// It also gives every table an index on _id as SQLite text (strings decoded, so in MongoDB's
// byte order), which the patched find reads for a range of string _ids sorted by _id with a
// limit (a listing's page) instead of reading and sorting the whole table. A table made by
// this build gets both when it is made (patches/id_indexes.go.in, the same statements); the
// maintainer gives them to tables from before, and keeps doing so for any table that lacks them.
//
// It also checkpoints the write-ahead log. SQLite's automatic checkpoint runs inside the
// commit that passes its threshold, and again in every later commit while it cannot finish
// (readers overlapping): each scans the whole log, a fifth of the CPU time of a run of guarded
// updates. FerretDB's connections have it turned off (main.go); the maintainer runs a passive
// checkpoint every round instead, beside the writers. Passive checkpoints never reset the log
// while readers keep overlapping, and it grows without bound (570 MB was seen), slowing every
// read: past a size limit the maintainer runs a TRUNCATE checkpoint, which waits for readers
// of older snapshots to finish, copies the log into the database and empties it.
//
// Index changes and TRUNCATE checkpoints run with the proxy's write turn held, so that
// FerretDB's writers wait in the proxy rather than in SQLite's busy handler.

const (
	lookupIndexSuffix = "__id_lookup"
	idExpression      = `_ferretdb_sjson->'$._id'`
	orderIndexSuffix  = "__id_order"
	// The same text as idOrderExpression in patches/id_condition.go.in: SQLite uses an index on
	// an expression only for that expression.
	idOrderExpression = `_ferretdb_sjson->>'$._id'`
	collectionsTable  = "_ferretdb_collections"
)

type maintainer struct {
	dir      string
	proxy    *serializingProxy
	logger   *slog.Logger
	walLimit int64
	dbs      map[string]openFile
}

// openFile is a database file held open, with the identity of the file it opened: a dropped
// database's file is deleted and may come back under the same name as a new file.
type openFile struct {
	db *sql.DB
	fi os.FileInfo
}

func newMaintainer(dir string, proxy *serializingProxy, logger *slog.Logger, walLimit int64) *maintainer {
	return &maintainer{dir: dir, proxy: proxy, logger: logger, walLimit: walLimit, dbs: map[string]openFile{}}
}

// run repeats a round every interval until ctx ends.
func (m *maintainer) run(ctx context.Context, every time.Duration) {
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	defer m.close()
	for {
		m.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (m *maintainer) round(ctx context.Context) {
	files, err := filepath.Glob(filepath.Join(m.dir, "*.sqlite"))
	if err != nil {
		m.logger.Error("list database files", "error", err)
		return
	}
	present := make(map[string]bool, len(files))
	for _, file := range files {
		present[file] = true
	}
	for file, f := range m.dbs {
		if !present[file] {
			_ = f.db.Close()
			delete(m.dbs, file)
		}
	}
	for _, file := range files {
		if ctx.Err() != nil {
			return
		}
		db, err := m.open(file)
		if err != nil {
			m.logger.Error("open database file", "file", file, "error", err)
			continue
		}
		if err := m.indexLookups(ctx, db); err != nil {
			m.logger.Error("index _id lookups", "file", file, "error", err)
		}
		if err := m.checkpoint(ctx, db, file); err != nil {
			m.logger.Error("checkpoint", "file", file, "error", err)
		}
	}
}

func (m *maintainer) open(file string) (*sql.DB, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	if f, ok := m.dbs[file]; ok {
		if os.SameFile(f.fi, fi) {
			return f.db, nil
		}
		_ = f.db.Close()
		delete(m.dbs, file)
	}
	db, err := sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	m.dbs[file] = openFile{db: db, fi: fi}
	return db, nil
}

// indexLookups adds the lookup index to every collection table that lacks it.
func (m *maintainer) indexLookups(ctx context.Context, db *sql.DB) error {
	var hasCollections int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, collectionsTable).Scan(&hasCollections)
	if err != nil || hasCollections == 0 {
		return err
	}
	rows, err := db.QueryContext(ctx, fmt.Sprintf(
		`SELECT c.table_name FROM %q c WHERE (NOT EXISTS (SELECT 1 FROM sqlite_master i WHERE i.type = 'index' AND i.name = c.table_name || ?)
		   OR NOT EXISTS (SELECT 1 FROM sqlite_master i WHERE i.type = 'index' AND i.name = c.table_name || ?))
		 AND EXISTS (SELECT 1 FROM sqlite_master t WHERE t.type = 'table' AND t.name = c.table_name)`, collectionsTable),
		lookupIndexSuffix, orderIndexSuffix)
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	rows.Close()
	for _, t := range tables {
		m.proxy.writes.Lock()
		err := replaceIDIndex(ctx, db, t)
		m.proxy.writes.Unlock()
		if err != nil {
			m.logger.Warn("create lookup index", "table", t, "error", err)
		}
	}
	return nil
}

func replaceIDIndex(ctx context.Context, db *sql.DB, table string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	// The collection may have been dropped since it was listed; then there is nothing to do.
	var exists int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&exists); err != nil || exists == 0 {
		return err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`CREATE UNIQUE INDEX IF NOT EXISTS %q ON %q (%s)`, table+lookupIndexSuffix, table, idExpression)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (%s)`, table+orderIndexSuffix, table, idOrderExpression)); err != nil {
		return err
	}
	// FerretDB names an index <table>_<index name>; its _id index is "_id_".
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`DROP INDEX IF EXISTS %q`, table+"__id_")); err != nil {
		return err
	}
	return tx.Commit()
}

func (m *maintainer) checkpoint(ctx context.Context, db *sql.DB, file string) error {
	fi, err := os.Stat(file + "-wal")
	if err != nil {
		return nil
	}
	if fi.Size() < m.walLimit {
		// Copies what it can of the log into the database without waiting for anyone;
		// writers go on meanwhile.
		_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
		return err
	}
	m.proxy.writes.Lock()
	defer m.proxy.writes.Unlock()
	_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

func (m *maintainer) close() {
	for _, f := range m.dbs {
		_ = f.db.Close()
	}
}
