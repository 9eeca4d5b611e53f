package server

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAuthFailuresRateLimited: every failed AUTH is counted (INFO stats
// acl_access_denied_auth, the auth_failures_total metric), and the log
// gets at most one line per second, which says how many failures it
// stands for. One connection wrote 25.7 MB/s of log before.
func TestAuthFailuresRateLimited(t *testing.T) {
	const attempts = 5000
	ps := startPServer(t, Config{Dir: "-", RequirePass: "secret"})
	r := dialRaw(t, ps.addr)
	start := time.Now()
	r.send(strings.Repeat(encodeCommand("AUTH", "wrong"), attempts))
	for i := range attempts {
		if got := r.reply(); got != rawErr(errWrongPass) {
			t.Fatalf("AUTH %d: %q", i, got)
		}
	}
	elapsed := time.Since(start)
	// One more after a pause: its line reports the failures suppressed
	// since the last one.
	time.Sleep(1100 * time.Millisecond)
	if got := r.do("AUTH", "default", "wrong"); got != rawErr(errWrongPass) {
		t.Fatalf("last AUTH: %q", got)
	}
	if got := r.do("AUTH", "secret"); got != rawStatus("OK") {
		t.Fatalf("AUTH with the password: %q", got)
	}
	info := infoText(t, r, "stats")
	if got := fieldOf(info, "acl_access_denied_auth"); got != strconv.Itoa(attempts+1) {
		t.Errorf("INFO acl_access_denied_auth = %q, want %d", got, attempts+1)
	}
	lines := regexp.MustCompile(`(?m)^.*authentication failed.*$`).FindAllString(ps.logs.String(), -1)
	if max := int(elapsed/time.Second) + 2; len(lines) == 0 || len(lines) > max {
		t.Fatalf("%d log lines for %d failures in %v; want 1 to %d", len(lines), attempts+1, elapsed, max)
	}
	total := 0
	for _, l := range lines {
		m := regexp.MustCompile(`failures=(\d+)`).FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("log line without a failure count: %s", l)
		}
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	if total != attempts+1 {
		t.Errorf("the log lines account for %d failures, want %d:\n%s", total, attempts+1, strings.Join(lines, "\n"))
	}
}
