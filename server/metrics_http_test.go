package server

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// metricsURL returns the base URL of the metrics endpoint a server logged.
func metricsURL(t *testing.T, ps *pServer) string {
	t.Helper()
	re := regexp.MustCompile(`msg="metrics serving" addr=(\S+)`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(ps.logs.String()); m != nil {
			return "http://" + m[1]
		}
	}
	t.Fatalf("no metrics address in the log:\n%s", ps.logs)
	return ""
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestMetricsEndpointNoPprof: --metrics-addr serves /metrics, and Go's
// profiles only when asked for (they were always served, unauthenticated).
func TestMetricsEndpointNoPprof(t *testing.T) {
	ps := startPServer(t, Config{Dir: "-", MetricsAddr: "127.0.0.1:0"})
	base := metricsURL(t, ps)
	if got := httpStatus(t, base+"/metrics"); got != http.StatusOK {
		t.Errorf("/metrics: status %d", got)
	}
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/profile?seconds=1", "/debug/pprof/heap", "/"} {
		if got := httpStatus(t, base+p); got != http.StatusNotFound {
			t.Errorf("%s without pprof: status %d, want 404", p, got)
		}
	}
}

// TestMetricsEndpointPprof: with Pprof, the profiles are served too.
func TestMetricsEndpointPprof(t *testing.T) {
	ps := startPServer(t, Config{Dir: "-", MetricsAddr: "127.0.0.1:0", Pprof: true})
	base := metricsURL(t, ps)
	for _, p := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		if got := httpStatus(t, base+p); got != http.StatusOK {
			t.Errorf("%s with pprof: status %d", p, got)
		}
	}
	if strings.Contains(ps.logs.String(), "beyond loopback") {
		t.Errorf("warned about a loopback address:\n%s", ps.logs)
	}
}

func TestIsLoopback(t *testing.T) {
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:9121", true}, {"[::1]:9121", true}, {"127.1.2.3:80", true},
		{"0.0.0.0:9121", false}, {"[::]:9121", false}, {"10.0.0.5:9121", false}, {"192.168.1.2:1", false},
	} {
		a, err := net.ResolveTCPAddr("tcp", c.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := isLoopback(a); got != c.want {
			t.Errorf("isLoopback(%s) = %v, want %v", c.addr, got, c.want)
		}
	}
}
