package main

import (
	"encoding/binary"
	"errors"
	"io"
	"iter"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/FerretDB/wire/wirebson"
)

// FerretDB v1 applies an update as read, modify, write without isolation, so two concurrent
// updates of one document can lose one (40 parallel $inc were seen to leave 6). MongoDB makes
// every single-document write atomic, and the services rely on that. This proxy restores it:
// it sits between clients and FerretDB and lets only one write command run at a time, while
// reads pass concurrently. SQLite admits a single writer anyway, so little is lost.

const (
	opMsg       = 2013
	opQuery     = 2004
	moreToCome  = 1 << 1
	headerBytes = 16
	maxMessage  = 48 * 1024 * 1024
)

var writeCommands = map[string]bool{
	"insert": true, "update": true, "delete": true, "findAndModify": true, "findandmodify": true,
	"createIndexes": true, "dropIndexes": true, "drop": true, "dropDatabase": true, "create": true,
	"renameCollection": true,
}

type serializingProxy struct {
	backend string
	writes  sync.Mutex
	logger  *slog.Logger
	// slow, when positive, logs every command that takes at least that long (waiting for the
	// write turn included), with its body: the way to find what a slow workload asks for.
	slow time.Duration
	// cache, when not nil, answers repeated reads by _id (readcache.go).
	cache *readCache
}

func (p *serializingProxy) serve(l net.Listener) {
	for {
		client, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.logger.Error("accept", "error", err)
			}
			return
		}
		go p.handle(client)
	}
}

func (p *serializingProxy) handle(client net.Conn) {
	defer client.Close()
	backend, err := net.Dial("tcp", p.backend)
	if err != nil {
		p.logger.Error("dial backend", "error", err)
		return
	}
	defer backend.Close()

	for {
		req, err := readMessage(client)
		if err != nil {
			return
		}
		opCode := int32(binary.LittleEndian.Uint32(req[12:16]))
		flags := uint32(0)
		if opCode == opMsg && len(req) >= headerBytes+4 {
			flags = binary.LittleEndian.Uint32(req[16:20])
		}
		name := ""
		switch opCode {
		case opMsg:
			name = commandName(req)
		case opQuery:
			name = legacyCommandName(req)
		}
		write := writeCommands[name]
		start := time.Now()
		if write {
			p.writes.Lock()
		}
		turn := time.Now()
		err = p.run(client, backend, req, name, flags&moreToCome == 0)
		if write {
			p.writes.Unlock()
		}
		if p.slow > 0 && time.Since(start) >= p.slow {
			p.logger.Warn("slow command", "wait_ms", float64(turn.Sub(start).Microseconds())/1000,
				"run_ms", float64(time.Since(turn).Microseconds())/1000, "command", commandBody(req))
		}
		if err != nil {
			return
		}
	}
}

// run forwards one command (name is empty for a message that is not an OP_MSG), answering a
// read by _id from the cache when it can and keeping out of the cache whatever a command that
// is not known to be read-only may change (see readcache.go).
func (p *serializingProxy) run(client, backend net.Conn, req []byte, name string, expectReply bool) error {
	if p.cache == nil || readOnlyCommands[name] {
		_, err := p.roundTrip(client, backend, req, expectReply)
		return err
	}
	var body *wirebson.Document // nil for a message FerretDB will refuse, or that is not an OP_MSG
	if int32(binary.LittleEndian.Uint32(req[12:16])) == opMsg {
		body, _ = opMsgBody(req)
	}
	if name == "find" {
		ns, ids, ok := cacheableFind(body)
		if !ok || !expectReply {
			_, err := p.roundTrip(client, backend, req, expectReply)
			return err
		}
		answer, ticket := p.cache.lookup(ns, ids)
		if answer != nil {
			return writeAnswer(client, req, answer)
		}
		res, err := p.roundTrip(client, backend, req, expectReply)
		if err == nil && completeAnswer(res) {
			p.cache.keep(ticket, res[headerBytes:])
		}
		return err
	}
	scope := writeScopeOf(name, body, req)
	p.cache.touch(scope)
	defer p.cache.touch(scope)
	_, err := p.roundTrip(client, backend, req, expectReply)
	return err
}

// roundTrip forwards one request and, unless the client expects no answer, every reply to it
// (a reply flagged moreToCome is followed by more); it returns the last reply.
func (p *serializingProxy) roundTrip(client, backend net.Conn, req []byte, expectReply bool) (last []byte, err error) {
	if _, err := backend.Write(req); err != nil {
		return nil, err
	}
	for expectReply {
		res, err := readMessage(backend)
		if err != nil {
			return nil, err
		}
		if _, err := client.Write(res); err != nil {
			return nil, err
		}
		last = res
		opCode := int32(binary.LittleEndian.Uint32(res[12:16]))
		expectReply = opCode == opMsg && len(res) >= headerBytes+4 &&
			binary.LittleEndian.Uint32(res[16:20])&moreToCome != 0
	}
	return last, nil
}

func readMessage(r io.Reader) ([]byte, error) {
	header := make([]byte, headerBytes)
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, err
	}
	length := int(binary.LittleEndian.Uint32(header[0:4]))
	if length < headerBytes || length > maxMessage {
		return nil, errors.New("invalid message length")
	}
	msg := make([]byte, length)
	copy(msg, header)
	if _, err := io.ReadFull(r, msg[headerBytes:]); err != nil {
		return nil, err
	}
	return msg, nil
}

// sections yields the sections of an OP_MSG after its flag bits, each as its kind and its
// payload: for kind 0 the body document, for kind 1 the document sequence (int32 size, the
// identifier as a cstring, then the documents). It stops at the first malformed section.
func sections(msg []byte) iter.Seq2[byte, []byte] {
	return func(yield func(byte, []byte) bool) {
		for pos := headerBytes + 4; pos+5 <= len(msg); {
			size := int(binary.LittleEndian.Uint32(msg[pos+1 : pos+5])) // includes itself
			if size < 5 || pos+1+size > len(msg) || !yield(msg[pos], msg[pos+1:pos+1+size]) {
				return
			}
			pos += 1 + size
		}
	}
}

// bodySection returns the body (the kind-0 section) of an OP_MSG, nil if it has none.
func bodySection(msg []byte) wirebson.RawDocument {
	for kind, payload := range sections(msg) {
		if kind == 0 {
			return payload
		}
	}
	return nil
}

// commandName returns the first key of the body of an OP_MSG, which names the command.
func commandName(msg []byte) string {
	// BSON document: int32 length, then elements: type byte, cstring name, value.
	body := bodySection(msg)
	for end := 5; end < len(body); end++ {
		if body[end] == 0 {
			return string(body[5:end])
		}
	}
	return ""
}

// commandBody renders the body section of an OP_MSG for the slow log, cut to a readable length.
func commandBody(msg []byte) string {
	body := bodySection(msg)
	if opCode := int32(binary.LittleEndian.Uint32(msg[12:16])); opCode != opMsg || body == nil {
		return commandName(msg)
	}
	doc, err := body.DecodeDeep()
	if err != nil {
		return commandName(msg)
	}
	text := wirebson.LogMessageFlow(doc)
	if len(text) > 600 {
		text = text[:600] + "..."
	}
	return text
}
