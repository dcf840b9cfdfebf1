package main

import (
	"bytes"
	"container/list"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/FerretDB/wire/wirebson"
)

// A read of one document by _id costs FerretDB an SQLite query and a JSON decode: 0.4-0.5 ms
// on a quiet machine, several on a busy one. The services read the same documents again and
// again (a user's counter on every session of the user). Every command reaches FerretDB
// through this proxy, from every client, and the proxy already runs write commands one at a
// time, so it sees each write begin and end; it can therefore keep the answers of such reads
// exactly, as a database's own cache does:
//   - a write drops the kept answers of the documents it may change, when it begins and again
//     when it ends; a write whose documents cannot be told from its filter drops its whole
//     collection, and a command the proxy does not know drops everything;
//   - an answer is kept only if no write to its collection began or ended while the read ran,
//     so no answer read before a write is kept after it.

// readCache holds answers of `find` by a single _id (a string or an ObjectId), or by a short
// `$in` list of them (a user's counter and window document, read together), by collection and
// key (the _id, or the list), within a byte budget, least recently used first out.
type readCache struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	order    *list.List                                       // of *cachedAnswer, most recently used first
	byNs     map[string]map[string]*list.Element              // namespace -> key -> answer
	lists    map[string]map[string]map[*list.Element]struct{} // namespace -> _id -> answers of lists holding it
	writes   map[string]uint64                                // namespace -> writes begun or ended on it
	epoch    uint64                                           // commands that may change any namespace
}

type cachedAnswer struct {
	ns, key string
	ids     []string // the _ids of a list's answer (nil for one _id, whose key it is)
	body    []byte   // the OP_MSG after its header: flag bits and sections
}

// readTicket remembers what a read saw when it began, to tell at its end whether it may be kept.
type readTicket struct {
	ns            string
	ids           []string
	writes, epoch uint64
}

func newReadCache(maxBytes int) *readCache {
	return &readCache{maxBytes: maxBytes, order: list.New(), byNs: map[string]map[string]*list.Element{}, lists: map[string]map[string]map[*list.Element]struct{}{}, writes: map[string]uint64{}}
}

// cacheKey names the answer of a read of these _ids: the _id itself for one, else the list in
// its order, each _id after its length (a NUL cannot start an idKey, so no list's key is an _id's).
func cacheKey(ids []string) string {
	if len(ids) == 1 {
		return ids[0]
	}
	var k strings.Builder
	k.WriteByte(0)
	for _, id := range ids {
		k.WriteString(strconv.Itoa(len(id)))
		k.WriteByte(':')
		k.WriteString(id)
	}
	return k.String()
}

// lookup returns the kept answer body of a read of (ns, ids), or a ticket for keeping the
// answer the read is about to get.
func (c *readCache) lookup(ns string, ids []string) ([]byte, readTicket) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byNs[ns][cacheKey(ids)]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cachedAnswer).body, readTicket{}
	}
	return nil, readTicket{ns: ns, ids: ids, writes: c.writes[ns], epoch: c.epoch}
}

// keep stores an answer unless a write to its namespace began, ran or ended since the ticket.
func (c *readCache) keep(t readTicket, body []byte) {
	key := cacheKey(t.ids)
	if len(body)+len(t.ns)+len(key) > c.maxBytes/64 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.writes%2 == 1 || c.writes[t.ns] != t.writes || c.epoch != t.epoch {
		return
	}
	ids := c.byNs[t.ns]
	if ids == nil {
		ids = map[string]*list.Element{}
		c.byNs[t.ns] = ids
	}
	if _, ok := ids[key]; ok {
		return
	}
	a := &cachedAnswer{ns: t.ns, key: key, body: body}
	e := c.order.PushFront(a)
	ids[key] = e
	if len(t.ids) > 1 {
		a.ids = t.ids
		byID := c.lists[t.ns]
		if byID == nil {
			byID = map[string]map[*list.Element]struct{}{}
			c.lists[t.ns] = byID
		}
		for _, id := range t.ids {
			if byID[id] == nil {
				byID[id] = map[*list.Element]struct{}{}
			}
			byID[id][e] = struct{}{}
		}
	}
	c.bytes += len(body) + len(t.ns) + len(key)
	for c.bytes > c.maxBytes {
		c.remove(c.order.Back())
	}
}

func (c *readCache) remove(e *list.Element) {
	a := c.order.Remove(e).(*cachedAnswer)
	delete(c.byNs[a.ns], a.key)
	if len(c.byNs[a.ns]) == 0 {
		delete(c.byNs, a.ns)
	}
	for _, id := range a.ids {
		delete(c.lists[a.ns][id], e)
		if len(c.lists[a.ns][id]) == 0 {
			delete(c.lists[a.ns], id)
		}
	}
	if len(c.lists[a.ns]) == 0 {
		delete(c.lists, a.ns)
	}
	c.bytes -= len(a.body) + len(a.ns) + len(a.key)
}

// touch forgets what a write may change and marks the namespace written: called when the write
// begins and again when it ends. An empty ns stands for every namespace.
func (c *readCache) touch(w writeScope) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.ns == "" {
		c.epoch++
		c.order.Init()
		c.byNs = map[string]map[string]*list.Element{}
		c.lists = map[string]map[string]map[*list.Element]struct{}{}
		c.bytes = 0
		return
	}
	c.writes[w.ns]++
	ids := c.byNs[w.ns]
	if w.all {
		for _, e := range ids {
			c.remove(e)
		}
		return
	}
	for _, id := range w.ids {
		if e, ok := ids[id]; ok {
			c.remove(e)
		}
		for e := range c.lists[w.ns][id] {
			c.remove(e)
		}
	}
}

// writeScope is what a write command may change: some _ids of a namespace, all of it (all), or
// anything (ns empty).
type writeScope struct {
	ns  string
	ids []string
	all bool
}

// idKey names a _id that the cache keeps answers for: strings and ObjectIds, each in its own
// space (MongoDB compares numbers across types, so numeric _ids are never kept).
func idKey(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return "s" + v, true
	case wirebson.ObjectID:
		return "o" + string(v[:]), true
	}
	return "", false
}

// opMsgBody decodes the body of an OP_MSG, its first level only.
func opMsgBody(msg []byte) (*wirebson.Document, error) {
	body := bodySection(msg)
	if body == nil {
		return nil, errNoBody
	}
	return body.Decode()
}

// documentSequence returns the documents of the kind-1 section named `name`, if any.
func documentSequence(msg []byte, name string) []wirebson.RawDocument {
	var docs []wirebson.RawDocument
	for kind, payload := range sections(msg) {
		if kind != 1 {
			continue
		}
		section := payload[4:]
		end := bytes.IndexByte(section, 0)
		if end < 0 || string(section[:end]) != name {
			continue
		}
		for rest := section[end+1:]; len(rest) >= 5; {
			n := int(binary.LittleEndian.Uint32(rest[:4]))
			if n < 5 || n > len(rest) {
				return docs
			}
			docs = append(docs, wirebson.RawDocument(rest[:n]))
			rest = rest[n:]
		}
	}
	return docs
}

// listedIDs is the longest `$in` list whose reads are kept.
const listedIDs = 8

// cacheableFind returns the namespace and _ids of a `find` whose answer depends on nothing but
// those documents: a filter of exactly {_id: <string or ObjectId>}, no projection, sort, skip,
// collation or hint, and a batch size (if any) of at least one (an answer that does not hold
// the document is not kept: completeAnswer); or {_id: {$in: [up to listedIDs of them]}} with
// no limit, batch size or single batch either (a closed cursor may then hold some of them only).
func cacheableFind(body *wirebson.Document) (ns string, ids []string, ok bool) {
	if body == nil {
		return "", nil, false
	}
	coll, _ := body.Get("find").(string)
	db, _ := body.Get("$db").(string)
	if coll == "" || db == "" {
		return "", nil, false
	}
	bounded := false
	for i := 0; i < body.Len(); i++ {
		name, v := body.GetByIndex(i)
		switch name {
		case "find", "$db", "lsid", "$clusterTime", "$readPreference", "readConcern", "maxTimeMS", "comment", "filter":
		case "limit", "singleBatch":
			bounded = true
		case "batchSize":
			if n, isInt := v.(int32); !isInt || n < 1 {
				return "", nil, false
			}
			bounded = true
		default:
			return "", nil, false
		}
	}
	raw, isDoc := body.Get("filter").(wirebson.RawDocument)
	if !isDoc {
		return "", nil, false
	}
	filter, err := raw.Decode()
	if err != nil || filter.Len() != 1 {
		return "", nil, false
	}
	name, v := filter.GetByIndex(0)
	if name != "_id" {
		return "", nil, false
	}
	if id, ok := idKey(v); ok {
		return db + "." + coll, []string{id}, true
	}
	if bounded {
		return "", nil, false
	}
	ids, ok = listedKeys(v)
	return db + "." + coll, ids, ok
}

// listedKeys returns the idKeys of a `{$in: [...]}` of 2 to listedIDs string or ObjectId _ids.
func listedKeys(v any) ([]string, bool) {
	raw, isDoc := v.(wirebson.RawDocument)
	if !isDoc {
		return nil, false
	}
	op, err := raw.Decode()
	if err != nil || op.Len() != 1 {
		return nil, false
	}
	opName, list := op.GetByIndex(0)
	arr, isArr := list.(wirebson.RawArray)
	if opName != "$in" || !isArr {
		return nil, false
	}
	items, err := arr.Decode()
	if err != nil || items.Len() < 2 || items.Len() > listedIDs {
		return nil, false
	}
	ids := make([]string, 0, items.Len())
	for i := 0; i < items.Len(); i++ {
		k, ok := idKey(items.Get(i))
		if !ok {
			return nil, false
		}
		ids = append(ids, k)
	}
	return ids, true
}

// writeScopeOf returns what a command that is not known to be read-only may change (see
// writeScope): anything, unless it is an insert, update, delete or findAndModify of one
// collection.
func writeScopeOf(name string, body *wirebson.Document, msg []byte) writeScope {
	if body == nil {
		return writeScope{}
	}
	db, _ := body.Get("$db").(string)
	coll, _ := body.Get(name).(string)
	if db == "" || coll == "" {
		return writeScope{}
	}
	w := writeScope{ns: db + "." + coll}
	// ids adds the _ids a statement's filter is limited to; false when it is not limited to
	// string or ObjectId _ids (an upsert may then create a document under any _id).
	ids := func(q any) bool {
		raw, isDoc := q.(wirebson.RawDocument)
		if !isDoc {
			return false
		}
		filter, err := raw.Decode()
		if err != nil {
			return false
		}
		switch v := filter.Get("_id").(type) {
		case wirebson.RawDocument:
			op, err := v.Decode()
			if err != nil || op.Len() != 1 {
				return false
			}
			opName, list := op.GetByIndex(0)
			arr, isArr := list.(wirebson.RawArray)
			if opName != "$in" || !isArr {
				return false
			}
			items, err := arr.Decode()
			if err != nil {
				return false
			}
			for i := 0; i < items.Len(); i++ {
				k, ok := idKey(items.Get(i))
				if !ok {
					return false
				}
				w.ids = append(w.ids, k)
			}
			return true
		default:
			k, ok := idKey(v)
			if ok {
				w.ids = append(w.ids, k)
			}
			return ok
		}
	}
	// statements returns the documents of the command's array field or document sequence.
	statements := func(field string) []wirebson.RawDocument {
		docs := documentSequence(msg, field)
		if arr, isArr := body.Get(field).(wirebson.RawArray); isArr {
			items, err := arr.Decode()
			if err != nil {
				return nil
			}
			for i := 0; i < items.Len(); i++ {
				if d, isDoc := items.Get(i).(wirebson.RawDocument); isDoc {
					docs = append(docs, d)
				}
			}
		}
		return docs
	}
	limited := true
	switch name {
	case "insert":
		for _, d := range statements("documents") {
			limited = limited && ids(d)
		}
	case "update", "delete":
		for _, d := range statements(map[string]string{"update": "updates", "delete": "deletes"}[name]) {
			s, err := d.Decode()
			limited = limited && err == nil && ids(s.Get("q"))
		}
	case "findAndModify", "findandmodify":
		limited = ids(body.Get("query"))
	default:
		return writeScope{}
	}
	w.all = !limited
	return w
}

var errNoBody = errors.New("OP_MSG without a body section")

// readOnlyCommands change no document and pass the cache by (find, read-only too, is answered
// from it). Any other command that is not an insert, update, delete or findAndModify empties
// the cache (writeScopeOf), to be safe.
var readOnlyCommands = map[string]bool{
	"getMore": true, "killCursors": true, "count": true, "distinct": true, "aggregate": true,
	"listCollections": true, "listIndexes": true, "listDatabases": true, "dbStats": true, "collStats": true,
	"hello": true, "isMaster": true, "ismaster": true, "ping": true, "buildInfo": true, "buildinfo": true,
	"getParameter": true, "endSessions": true, "saslStart": true, "saslContinue": true, "connectionStatus": true,
	"serverStatus": true, "getLog": true, "whatsmyuri": true, "explain": true, "dataSize": true, "validate": true,
	"getCmdLineOpts": true, "hostInfo": true, "getFreeMonitoringStatus": true, "lockInfo": true, "currentOp": true,
}

// legacyCommandName returns the command of an OP_QUERY on a database's "$cmd" collection, the
// form drivers still use for the first handshake of a connection ("" for anything else).
func legacyCommandName(msg []byte) string {
	pos := headerBytes + 4 // flags
	end := bytes.IndexByte(msg[min(pos, len(msg)):], 0) + pos
	if end < pos || !strings.HasSuffix(string(msg[pos:end]), ".$cmd") {
		return ""
	}
	pos = end + 1 + 8 // numberToSkip, numberToReturn
	if pos+4 > len(msg) {
		return ""
	}
	size := int(binary.LittleEndian.Uint32(msg[pos : pos+4]))
	if size < 5 || pos+size > len(msg) {
		return ""
	}
	doc, err := wirebson.RawDocument(msg[pos : pos+size]).Decode()
	if err != nil || doc.Len() == 0 {
		return ""
	}
	name, _ := doc.GetByIndex(0)
	return name
}

// completeAnswer tells whether a reply to a find is one OP_MSG, without checksum, with ok: 1
// and a cursor that is exhausted (id 0): then it is the whole answer.
func completeAnswer(res []byte) bool {
	if len(res) < headerBytes+5 || int32(binary.LittleEndian.Uint32(res[12:16])) != opMsg || binary.LittleEndian.Uint32(res[16:20]) != 0 {
		return false
	}
	body, err := opMsgBody(res)
	if err != nil {
		return false
	}
	if ok, isNum := body.Get("ok").(float64); !isNum || ok != 1 {
		return false
	}
	raw, isDoc := body.Get("cursor").(wirebson.RawDocument)
	if !isDoc {
		return false
	}
	cursor, err := raw.Decode()
	if err != nil {
		return false
	}
	id, isLong := cursor.Get("id").(int64)
	return isLong && id == 0
}

// writeAnswer sends a kept answer as the reply to req.
func writeAnswer(client net.Conn, req []byte, body []byte) error {
	msg := make([]byte, headerBytes+len(body))
	binary.LittleEndian.PutUint32(msg[0:4], uint32(len(msg)))
	binary.LittleEndian.PutUint32(msg[4:8], 0)
	copy(msg[8:12], req[4:8]) // responseTo: the request's id
	binary.LittleEndian.PutUint32(msg[12:16], opMsg)
	copy(msg[headerBytes:], body)
	_, err := client.Write(msg)
	return err
}
