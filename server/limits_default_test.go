package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestDefaultLimitsRefuseReserveBomb: on the default limits, filters no
// machine could hold are refused whatever the machine's size, with
// RedisBloom's error, and nothing is created: twenty BF.RESERVEs of 10⁹
// items at 10⁻⁹ (12 GB each) were accepted, and a scalable filter
// with EXPANSION 32768 grew to a 2 GB sub-filter in three steps.
func TestDefaultLimitsRefuseReserveBomb(t *testing.T) {
	srv, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	for i := range 20 {
		key := fmt.Sprint("huge", i)
		if got := c.do("BF.RESERVE", key, "1e-9", "1073741824"); got != rawErr(errNoMemoryText) {
			t.Fatalf("BF.RESERVE %s 1e-9 1073741824: %q, want %q", key, got, errNoMemoryText)
		}
	}
	if got := c.do("DBSIZE"); got != rawInt(0) {
		t.Fatalf("DBSIZE after the refused reserves: %q", got)
	}
	// Growth: sub-filters of 1, 32768 and 2³⁰ items.
	added, refused := 0, ""
	for batch := 0; refused == "" && batch < 20; batch++ {
		args := []string{"BF.INSERT", "k", "CAPACITY", "1", "EXPANSION", "32768", "ITEMS"}
		for i := range 5000 {
			args = append(args, fmt.Sprintf("item:%d:%d", batch, i))
		}
		reply := c.do(args...)
		for _, el := range strings.Split(strings.TrimSuffix(reply, "\r\n"), "\r\n")[1:] {
			if strings.HasPrefix(el, "-") {
				refused = el[1:]
				break
			}
			added++
		}
	}
	if refused != errNoMemoryText {
		t.Fatalf("BF.INSERT EXPANSION 32768 after %d items: error %q, want %q", added, refused, errNoMemoryText)
	}
	if added < 32768 {
		t.Errorf("only %d items before the growth was refused; the first two sub-filters hold 32769", added)
	}
	if got := c.do("BF.INFO", "k", "FILTERS"); got != rawArray(rawInt(2)) {
		t.Errorf("BF.INFO k FILTERS after the refused growth: %q, want 2 sub-filters", got)
	}
	if used := srv.backend.Stats().FilterBytes; used > 1<<20 {
		t.Errorf("filters hold %d bytes after the refusals; want only the small ones", used)
	}
	info := infoText(t, c, "memory")
	if got := fieldOf(info, "maxmemory_per_filter"); got != strconv.Itoa(128<<20) {
		t.Errorf("INFO maxmemory_per_filter = %q, want the default 134217728", got)
	}
}

// infoText returns the text of INFO section.
func infoText(t *testing.T, c *rawConn, section string) string {
	t.Helper()
	got := c.do("INFO", section)
	_, body, _ := strings.Cut(got, "\r\n")
	return body
}

// TestLoadBeyondLimitsHint: a data directory holding a filter beyond the
// limits in force (written under larger ones, as the 16 GiB per filter
// before the default became 128 MiB) fails to load with a message that
// says larger limits load it, not only the log's advice to truncate it.
func TestLoadBeyondLimitsHint(t *testing.T) {
	dir := t.TempDir()
	ps := startPServer(t, Config{Dir: dir, MaxFilterBytes: 1 << 20})
	ps.do(t, "BF.RESERVE", "big", "0.01", "400000") // about 500 KB
	crash := copyDataDir(t, dir)
	_, err := newPServer(t, Config{Dir: crash, MaxFilterBytes: 256 << 10})
	if err == nil || !strings.Contains(err.Error(), "start with larger limits to load it, e.g. --maxmemory-per-filter unlimited") ||
		!strings.Contains(err.Error(), "--maxmemory-per-filter 256.00K") {
		t.Fatalf("loading a 500 KB filter under a 256 KiB limit: %v", err)
	}
	if _, err := newPServer(t, Config{Dir: crash, MaxFilterBytes: Unlimited}); err != nil {
		t.Fatalf("loading it with no per-filter limit: %v", err)
	}
}
