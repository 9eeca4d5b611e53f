package server

import (
	"bytes"
	"hash/crc32"
)

// Merged adds (docs/PERSISTENCE.md, "The log"). Adds to the same
// existing filter that follow each other in the log (a client pipelining
// BF.ADD or CF.ADD on one key, many clients adding to one filter, the new
// items of each BF.MADD or BF.INSERT) are journaled as one record: the
// first item as the short record BF.ADD key item (CF.ADD), and each next
// one extends it into BF.INSERT key NOCREATE ITEMS item… (CF.INSERT),
// which the replayer applies item by item, in order, as the adds were
// applied; only items that changed the filter are journaled at all, so
// the replay reaches the same bytes. Sixteen CF.ADD cf __rand_int__ make
// one record of 368 bytes where short records took 864: fewer bytes to
// store, fewer new pages of the log, and a third as many automatic
// snapshots for the same writes.
//
// The record stays open (persistence.open) while adds extend it, and is
// closed into the buffer, framed and checksummed once, before any other
// record is appended, before a writer takes the buffer, and at
// maxMerged items or maxMergedBytes. Its bytes are counted in appended
// and logSize as they will be once closed, so positions stay byte
// offsets and a waiter's position covers its add.

// openAdd is the open record of merged adds (n = 0: none).
type openAdd struct {
	short, long []byte // the record's first word: BF.ADD or CF.ADD alone, BF.INSERT or CF.INSERT merged
	key         []byte // a copy
	items       []byte // the items' bulk strings, framed
	n           int    // items
	size        int64  // the record's bytes once closed
}

// Bounds of a merged record: a replayed record is one command, well
// within the reader's limits and the server's batches.
const (
	maxMerged      = 256
	maxMergedBytes = 32 << 10
)

// appendAdd journals the short record cmd key item, BF.ADD or CF.ADD
// (the journal interface): it extends the open record when that is of
// the same command and key, and has room.
func (p *persistence) appendAdd(cmd, key, item []byte) {
	if !p.lockOpen() {
		return
	}
	p.appendedLocked(p.merge(cmd, key, item))
}

// appendAdds journals the adds of items in turn, as appendAdd would one
// by one (the journal interface), under one hold of mu: one change.
func (p *persistence) appendAdds(cmd, key []byte, items [][]byte) {
	if !p.lockOpen() {
		return
	}
	var grew int64
	for _, item := range items {
		grew += p.merge(cmd, key, item)
	}
	p.appendedLocked(grew)
}

// addWords are the words of the short add cmd and of the insert it
// stands for, as the read-only globals (the open record keeps them).
func addWords(cmd []byte) (short, long []byte) {
	if bytes.Equal(cmd, wordCFAdd) {
		return wordCFAdd, wordCFInsert
	}
	return wordAdd, wordInsert
}

// merge adds the short record cmd key item to the open record, closing
// the open one first if it cannot take it, and returns the bytes the log
// grows by. The caller holds mu.
func (p *persistence) merge(cmd, key, item []byte) int64 {
	o := &p.open
	if o.n > 0 && (!bytes.Equal(o.short, cmd) || !bytes.Equal(o.key, key) ||
		o.n >= maxMerged || len(o.items)+len(item) > maxMergedBytes) {
		p.closeOpen()
	}
	if o.n == 0 {
		o.short, o.long = addWords(cmd)
		o.key = append(o.key[:0], key...)
		o.items = o.items[:0]
	}
	o.items = appendBulk(o.items, item)
	o.n++
	size := o.recordSize()
	grew := size - o.size
	o.size = size
	return grew
}

// appendBulk appends the RESP bulk string of b.
func appendBulk(dst, b []byte) []byte {
	dst = appendHeader(dst, '$', len(b))
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// recordSize is the length of the open record once closed: appendRecord's
// framing of its words, key and items, and the checksum line.
func (o *openAdd) recordSize() int64 {
	n := int64(len(o.items)) + checksumLen + bulkLen(len(o.key))
	if o.n == 1 {
		return n + headerLen(3) + bulkLen(len(o.short))
	}
	return n + headerLen(4+o.n) + bulkLen(len(o.long)) + bulkLen(len(wordNoCreate)) + bulkLen(len(wordItems))
}

// closeOpen frames the open record, if any, into the buffer. The caller
// holds mu.
func (p *persistence) closeOpen() {
	o := &p.open
	if o.n == 0 {
		return
	}
	start := len(p.buf)
	if o.n == 1 {
		p.buf = appendHeader(p.buf, '*', 3)
		p.buf = appendBulk(p.buf, o.short)
	} else {
		p.buf = appendHeader(p.buf, '*', 4+o.n)
		p.buf = appendBulk(p.buf, o.long)
	}
	p.buf = appendBulk(p.buf, o.key)
	if o.n > 1 {
		p.buf = appendBulk(p.buf, wordNoCreate)
		p.buf = appendBulk(p.buf, wordItems)
	}
	p.buf = append(p.buf, o.items...)
	p.buf = appendChecksum(p.buf, crc32.Checksum(p.buf[start:], castagnoli))
	if int64(len(p.buf)-start) != o.size {
		panic("server: a merged log record's size was miscounted") // positions would no longer be offsets
	}
	o.n, o.size = 0, 0
}

// headerLen is the length of the RESP header line of n (appendHeader).
func headerLen(n int) int64 { return 1 + digits(n) + 2 }

// bulkLen is the length of a bulk string of n bytes (appendBulk).
func bulkLen(n int) int64 { return headerLen(n) + int64(n) + 2 }

// digits is the number of decimal digits of n ≥ 0.
func digits(n int) int64 {
	d := int64(1)
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}
