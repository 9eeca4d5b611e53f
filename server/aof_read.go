package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
)

// Reading a log back: each record is parsed strictly (the form
// appendRecord writes, nothing else) and its checksum verified before
// the command is applied. Every length is checked against the bytes left
// in the file before anything is allocated for it, so a corrupt length
// cannot cause a large allocation: a record never takes more memory than
// the file's size.

// errTorn is a record the file ends inside of: an interrupted append.
var errTorn = errors.New("the file ends inside this record")

// maxNumberLine bounds a "*N" or "$N" line: the prefix, 19 digits, CRLF.
const maxNumberLine = 1 + 19 + 2

// logReader reads the records of one log file.
type logReader struct {
	r    *bufio.Reader
	off  int64 // offset of the next unread byte
	size int64 // the file's size
	rec  []byte
	span [][2]int // each argument's start and end in rec
	args [][]byte
}

func newLogReader(r io.Reader, size int64) *logReader {
	return &logReader{r: bufio.NewReaderSize(r, 64<<10), size: size}
}

// next reads the next record and returns its arguments (valid until the
// next call). At the end of the file it returns io.EOF; when the file
// ends inside the record, errTorn; for anything else that is not a
// record, an error saying what is wrong.
func (lr *logReader) next() ([][]byte, error) {
	start := lr.off
	lr.rec, lr.span = lr.rec[:0], lr.span[:0]
	n, err := lr.number('*')
	if err != nil {
		if errors.Is(err, errTorn) && lr.off == start {
			return nil, io.EOF
		}
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("a record of no arguments")
	}
	for range n {
		l, err := lr.number('$')
		if err != nil {
			return nil, err
		}
		if l > lr.size-lr.off {
			return nil, errTorn // the rest of the file is this argument's beginning
		}
		at := len(lr.rec)
		lr.rec = grow(lr.rec, int(l)+2, lr.size-lr.off)
		got, err := lr.fill(lr.rec[at:])
		crlf := lr.rec[at+int(l) : at+int(l)+min(max(got-int(l), 0), 2)] // what the file has of it
		if !bytes.HasPrefix([]byte("\r\n"), crlf) {
			return nil, fmt.Errorf("an argument of %d bytes is not followed by CRLF", l)
		}
		if err != nil {
			return nil, err
		}
		lr.span = append(lr.span, [2]int{at, at + int(l)})
	}
	want, err := lr.checksum()
	if err != nil {
		return nil, err
	}
	if got := crc32.Checksum(lr.rec, castagnoli); got != want {
		return nil, fmt.Errorf("checksum mismatch (the record says %08x, its bytes give %08x)", want, got)
	}
	lr.args = lr.args[:0]
	for _, sp := range lr.span {
		lr.args = append(lr.args, lr.rec[sp[0]:sp[1]])
	}
	return lr.args, nil
}

// grow extends b by n bytes. When it reallocates, it adds room for more
// (up to 1 MiB, doubling) but never more than left, the bytes left in the
// file, so a record's buffer is never larger than the file.
func grow(b []byte, n int, left int64) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+max(n, int(min(int64(len(b)), 1<<20, left))))
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// fill reads len(b) bytes and returns how many it got; errTorn at the
// end of the file.
func (lr *logReader) fill(b []byte) (int, error) {
	n, err := io.ReadFull(lr.r, b)
	lr.off += int64(n)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return n, errTorn
	}
	return n, err
}

// byte reads one byte; errTorn at the end of the file.
func (lr *logReader) byte() (byte, error) {
	c, err := lr.r.ReadByte()
	if err == io.EOF {
		return 0, errTorn
	}
	if err == nil {
		lr.off++
	}
	return c, err
}

// number reads a line "<prefix><decimal>\r\n" into rec and returns the
// decimal. Each byte is checked as it arrives, so that a file ending
// inside the line is torn only if what is there is a valid beginning.
func (lr *logReader) number(prefix byte) (int64, error) {
	at := len(lr.rec)
	for {
		c, err := lr.byte()
		if err != nil {
			return 0, err
		}
		lr.rec = append(lr.rec, c)
		line := lr.rec[at:]
		n := len(line)
		switch {
		case n == 1 && c != prefix:
			return 0, fmt.Errorf("expected %q, found %q", prefix, c)
		case n == 1:
		case line[n-2] == '\r' && c == '\n' && n >= 4:
			digits := line[1 : n-2]
			v, err := strconv.ParseInt(string(digits), 10, 64)
			if err != nil || (digits[0] == '0' && len(digits) > 1) {
				return 0, fmt.Errorf("malformed length line %q", line)
			}
			return v, nil
		case c == '\r' && n >= 3, c >= '0' && c <= '9' && n < maxNumberLine-1:
		default:
			return 0, fmt.Errorf("malformed length line %q", line)
		}
	}
}

// checksum reads a checksum line "+xxxxxxxx\r\n", checking each byte as
// it arrives.
func (lr *logReader) checksum() (uint32, error) {
	var v uint32
	for i := range checksumLen {
		c, err := lr.byte()
		if err != nil {
			return 0, err
		}
		ok := false
		switch {
		case i == 0:
			ok = c == '+'
		case i <= 8 && c >= '0' && c <= '9':
			v, ok = v<<4|uint32(c-'0'), true
		case i <= 8 && c >= 'a' && c <= 'f':
			v, ok = v<<4|uint32(c-'a'+10), true
		case i == 9:
			ok = c == '\r'
		case i == 10:
			ok = c == '\n'
		}
		if !ok {
			return 0, fmt.Errorf("the checksum line is malformed (byte %d is %q)", i, c)
		}
	}
	return v, nil
}

// repairLog is the advice for a corrupt log record.
func repairLog(name string, off int64) string {
	return fmt.Sprintf("truncate -s %d %s to drop this record and everything after it (losing those changes), "+
		"or restore the directory from a backup", off, name)
}

// replayLog applies the records of a log file through l. When last
// (the newest log), a record the file ends inside of is cut off, with a
// warning; any other defect is an error naming the file, the record's
// offset and the repair. It returns the number of records applied.
func (p *persistence) replayLog(name string, last bool, l loader) (int64, error) {
	f, size, err := openSized(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if end, err := zeroTail(f, size); err != nil {
		return 0, fmt.Errorf("server: read %s: %w", name, err)
	} else if end < size {
		if err := p.cutTail(name, end, size, "the log ends in zeros (room the server had claimed for appends when it stopped without closing the log); cutting them"); err != nil {
			return 0, err
		}
		size = end
	}
	lr := newLogReader(f, size)
	records := int64(0)
	for {
		start := lr.off
		args, err := lr.next()
		switch {
		case err == io.EOF:
			return records, nil
		case errors.Is(err, errTorn) && !last:
			return records, fmt.Errorf("server: %s: offset %d: the file ends inside a record, but a newer log follows it; %s",
				name, start, repairLog(name, start))
		case errors.Is(err, errTorn):
			if next, ok := recordAfter(f, start, size); ok {
				return records, fmt.Errorf("server: %s: offset %d: corrupt record: its lengths run past the end of the file, "+
					"but a complete record follows at offset %d, so this is no interrupted append; %s",
					name, start, next, repairLog(name, start))
			}
			return records, p.cutTornTail(name, start, size)
		case err != nil:
			return records, fmt.Errorf("server: %s: offset %d: corrupt record: %v; %s", name, start, err, repairLog(name, start))
		}
		if err := apply(l, args); err != nil {
			if errors.Is(err, errNoMemory) { // the limits, not the file: no repair (server.limitsHint says what to do)
				return records, fmt.Errorf("server: %s: offset %d: cannot apply the record: %w", name, start, err)
			}
			return records, fmt.Errorf("server: %s: offset %d: cannot apply the record: %w; %s", name, start, err, repairLog(name, start))
		}
		records++
	}
}

// recordAfter looks for a complete record with a good checksum starting
// after offset start: if there is one, a record that seems to run past
// the end of the file has a corrupt length, it is not the torn end of an
// interrupted append.
func recordAfter(f *os.File, start, size int64) (int64, bool) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, start+1, size-start-1), 64<<10)
	lr := newLogReader(nil, 0)
	for off := start + 1; ; off++ {
		c, err := br.ReadByte()
		if err != nil {
			return 0, false
		}
		if c != '*' {
			continue
		}
		lr.r.Reset(io.NewSectionReader(f, off, size-off))
		lr.off, lr.size = 0, size-off
		if _, err := lr.next(); err == nil {
			return off, true
		}
	}
}

// apply replays one record through l. A panic in the replay (a bug that
// a record reached) becomes an error: the file is named, the server does
// not crash.
func apply(l loader, args [][]byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("replaying %q (%d arguments) panicked: %v", args[0], len(args), r)
		}
	}()
	return l.apply(args)
}

// zeroTail returns where the zeros at the end of a file of size bytes
// begin (size when it does not end in a zero). No record ends in a zero
// byte (each ends in CRLF), so the zeros a log's mapped appends run ahead
// of its records by (aof_map_linux.go) are never part of one.
func zeroTail(f *os.File, size int64) (int64, error) {
	var buf [64 << 10]byte
	for end := size; end > 0; {
		n := min(end, int64(len(buf)))
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexFunc(buf[:n], func(r rune) bool { return r != 0 }); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}

// cutTornTail truncates the log to its last complete record: the end of
// an append that a crash interrupted, never acknowledged to a client.
func (p *persistence) cutTornTail(name string, off, size int64) error {
	return p.cutTail(name, off, size, "the log ends inside a record (an interrupted append); cutting it off")
}

// cutTail truncates the log to off bytes, saying why in a warning.
func (p *persistence) cutTail(name string, off, size int64, why string) error {
	p.log.Warn(why, "file", name, "offset", off, "bytes_dropped", size-off)
	w, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("server: cut the torn end of %s: %w", name, err)
	}
	err = w.Truncate(off)
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("server: cut the torn end of %s at offset %d: %w", name, off, err)
	}
	return nil
}
