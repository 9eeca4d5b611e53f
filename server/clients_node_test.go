package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nodeClientDir holds the node-redis test script and its package.json;
// scripts/install-deps installs its node_modules (npm ci).
var nodeClientDir = filepath.Join("testdata", "clients", "node")

// TestNodeRedis runs testdata/clients/node/bf.mjs: node-redis's Bloom
// filter API (@redis/bloom: reserve, add, mAdd, exists, mExists, insert,
// info, card, scanDump and loadChunk with the chunks as bytes, a
// transaction) on a default client. Node and the package are
// dependencies of the tests, installed by scripts/install-deps: missing,
// the test fails and says how to install them.
func TestNodeRedis(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: run scripts/install-deps (Debian's nodejs and npm)")
	}
	if _, err := os.Stat(filepath.Join(nodeClientDir, "node_modules", "redis")); err != nil {
		t.Fatalf("node-redis is not installed in %s: run scripts/install-deps (npm ci there)", nodeClientDir)
	}
	for name, cfg := range map[string]Config{"event loops": {}, "goroutine per conn": {GoroutinePerConn: true}} {
		t.Run(name, func(t *testing.T) {
			_, addr := startServer(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, node, filepath.Join(nodeClientDir, "bf.mjs"), addr).CombinedOutput()
			if err != nil || !strings.HasSuffix(string(out), "ok\n") {
				t.Fatalf("bf.mjs: %v\n%s", err, out)
			}
		})
	}
}
