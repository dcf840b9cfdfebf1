package main

import (
	"context"
	"log/slog"
)

// lazyAttrs keeps the attributes a child logger is made with and formats them only for a
// record that is written. FerretDB makes a child logger with the statement and its arguments
// (whole documents) for every SQL statement, and slog's text handler quotes them at once: a
// fifth of the database's CPU time went to formatting attributes of records never written
// (only errors are).
type lazyAttrs struct {
	base slog.Handler
	// ops holds the attributes and groups in the order they were added: a
	// group (attrs nil), or attributes as they came.
	ops []lazyOp
}

type lazyOp struct {
	group string
	attrs []slog.Attr
}

func (h *lazyAttrs) Enabled(ctx context.Context, level slog.Level) bool {
	return h.base.Enabled(ctx, level)
}

func (h *lazyAttrs) Handle(ctx context.Context, r slog.Record) error {
	out := h.base
	for _, op := range h.ops {
		if op.attrs == nil {
			out = out.WithGroup(op.group)
		} else {
			out = out.WithAttrs(op.attrs)
		}
	}
	return out.Handle(ctx, r)
}

func (h *lazyAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return &lazyAttrs{base: h.base, ops: append(h.ops[:len(h.ops):len(h.ops)], lazyOp{attrs: attrs})}
}

func (h *lazyAttrs) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &lazyAttrs{base: h.base, ops: append(h.ops[:len(h.ops):len(h.ops)], lazyOp{group: name})}
}
