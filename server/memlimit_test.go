package server

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// memFixture is a fake /proc and cgroup tree in a temporary directory.
type memFixture struct {
	t   *testing.T
	dir string
	src memorySources
}

func newMemFixture(t *testing.T) *memFixture {
	dir := t.TempDir()
	return &memFixture{t: t, dir: dir, src: memorySources{
		meminfo:   filepath.Join(dir, "meminfo"),
		mountinfo: filepath.Join(dir, "mountinfo"),
		cgroup:    filepath.Join(dir, "cgroup"),
	}}
}

// write writes body to name (relative to the fixture), creating its
// directories.
func (f *memFixture) write(name, body string) {
	f.t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

const (
	gib      = 1 << 30
	meminfo8 = "MemTotal:        8388608 kB\nMemFree:         1000000 kB\n" // 8 GiB
)

// mount is a mountinfo line mounting root of a hierarchy at point (a
// directory of the fixture); v1 mounts carry the memory controller.
func (f *memFixture) mount(v2 bool, root, point string) string {
	p := strings.ReplaceAll(filepath.Join(f.dir, point), " ", `\040`)
	if v2 {
		return "41 31 0:38 " + root + " " + p + " rw,relatime - cgroup2 cgroup2 rw\n"
	}
	return "35 31 0:32 " + root + " " + p + " rw,relatime - cgroup cgroup rw,memory\n"
}

// v2 sets up 8 GiB of memory and a cgroup v2 hierarchy mounted from root
// at cg, with this process in group; limits are memory.max files by
// group directory.
func (f *memFixture) v2(root, group string, limits map[string]string) {
	f.write("meminfo", meminfo8)
	f.write("mountinfo", f.mount(true, root, "cg"))
	f.write("cgroup", "0::"+group+"\n")
	for dir, v := range limits {
		f.write(filepath.Join("cg", dir, "memory.max"), v+"\n")
	}
}

func TestDefaultMaxMemory(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(f *memFixture)
		want  uint64
		from  string
	}{
		{"physical memory only", func(f *memFixture) {
			f.write("meminfo", meminfo8)
		}, 4 * gib, "50% of physical memory (8.00G)"},
		{"cgroup v2 limit below the memory", func(f *memFixture) {
			f.v2("/", "/", map[string]string{"": "2147483648"})
		}, 1 * gib, "50% of cgroup memory limit (2.00G)"},
		{"cgroup v2 max", func(f *memFixture) {
			f.v2("/", "/", map[string]string{"": "max"})
		}, 4 * gib, "50% of physical memory (8.00G)"},
		{"cgroup v2 limit above the memory", func(f *memFixture) {
			f.v2("/", "/", map[string]string{"": "68719476736"})
		}, 4 * gib, "50% of physical memory (8.00G)"},
		{"cgroup v2 parent's limit", func(f *memFixture) {
			f.v2("/", "/a/b", map[string]string{"a": "1073741824", "a/b": "max"})
		}, gib / 2, "50% of cgroup memory limit (1.00G)"},
		{"cgroup v2 in a container without its own namespace", func(f *memFixture) {
			f.v2("/docker/abc", "/docker/abc", map[string]string{"": "3221225472"})
		}, 3 * gib / 2, "50% of cgroup memory limit (3.00G)"},
		{"cgroup v1 limit, hybrid mounts", func(f *memFixture) {
			f.write("meminfo", meminfo8)
			f.write("mountinfo", f.mount(false, "/", "cg/memory")+f.mount(true, "/", "cg/unified"))
			f.write("cgroup", "5:devices:/\n4:memory:/svc/x\n0::/\n")
			f.write("cg/memory/svc/x/memory.limit_in_bytes", "2147483648\n")
			f.write("cg/memory/memory.limit_in_bytes", "9223372036854771712\n")
		}, 1 * gib, "50% of cgroup memory limit (2.00G)"},
		{"cgroup v1 no limit", func(f *memFixture) {
			f.write("meminfo", meminfo8)
			f.write("mountinfo", f.mount(false, "/", "cg/memory"))
			f.write("cgroup", "4:cpu,memory:/svc\n")
			f.write("cg/memory/svc/memory.limit_in_bytes", "9223372036854771712\n")
		}, 4 * gib, "50% of physical memory (8.00G)"},
		{"a mount point with a space", func(f *memFixture) {
			f.write("meminfo", meminfo8)
			f.write("mountinfo", f.mount(true, "/", "c g"))
			f.write("cgroup", "0::/\n")
			f.write("c g/memory.max", "2147483648\n")
		}, 1 * gib, "50% of cgroup memory limit (2.00G)"},
		{"no meminfo, a cgroup limit", func(f *memFixture) {
			f.v2("/", "/", map[string]string{"": "2147483648"})
			os.Remove(f.src.meminfo)
		}, 1 * gib, "50% of cgroup memory limit (2.00G)"},
		{"malformed meminfo", func(f *memFixture) {
			f.write("meminfo", "MemTotal: lots\n")
		}, Unlimited, "unlimited (the machine's memory is unknown: set --maxmemory)"},
		{"nothing readable", func(*memFixture) {}, Unlimited, "unlimited (the machine's memory is unknown: set --maxmemory)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newMemFixture(t)
			c.setup(f)
			got, from := defaultMaxMemory(f.src.read())
			if got != c.want || from != c.from {
				t.Errorf("defaultMaxMemory = %d, %q; want %d, %q", got, from, c.want, c.from)
			}
		})
	}
}

// TestMachineMemory reads this machine's figures as the server does.
func TestMachineMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	mm := systemMemory.read()
	if mm.total < 64<<20 {
		t.Fatalf("MemTotal read as %d bytes", mm.total)
	}
	limit, _ := mm.limit()
	if limit == 0 || limit > mm.total {
		t.Errorf("limit %d with MemTotal %d and cgroup %d", limit, mm.total, mm.cgroup)
	}
	if rss, err := residentBytes(statmFile); err != nil || rss < 1<<20 || rss > mm.total {
		t.Errorf("resident set %d, %v", rss, err)
	}
}
