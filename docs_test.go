package bloom

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every design citation in the repository (code comments, tests, docs)
// points at a section of docs/DESIGN.md that exists, and nothing cites a
// design file outside the repository.
func TestDesignCitations(t *testing.T) {
	design, err := os.ReadFile("docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## §(\d+) `).FindAllStringSubmatch(string(design), -1) {
		sections[m[1]] = true
	}
	if len(sections) == 0 {
		t.Fatal("docs/DESIGN.md has no numbered sections")
	}
	cite := regexp.MustCompile(`DESIGN\.md,? §(\d+)`)
	bare := regexp.MustCompile(`(?:^|[^/])DESIGN\.md,? §`)
	found := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".md")) || path == "docs_test.go" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(b)
		if strings.Contains(text, "shared/DESIGN.md") || strings.Contains(text, "../shared/") {
			t.Errorf("%s cites a file outside the repository", path)
		}
		for _, line := range strings.Split(text, "\n") {
			for _, m := range cite.FindAllStringSubmatch(line, -1) {
				found++
				if !sections[m[1]] {
					t.Errorf("%s: %q cites a section docs/DESIGN.md does not have", path, strings.TrimSpace(line))
				}
			}
			if path != "docs/DESIGN.md" && bare.MatchString(line) && !strings.Contains(line, "docs/DESIGN.md") {
				t.Errorf("%s: %q: cite docs/DESIGN.md by its path", path, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no citation found: the test reads nothing")
	}
}

// A test that skips under the race detector (or where the vector Test
// is off, as it is under the race detector) must still run in make test:
// the race-free pass (make accuracy) runs the tests its -run pattern
// names in the packages it lists, so every such test, in any package of
// the module, must match the pattern and be in a listed package.
func TestRaceSkipsRunSomewhere(t *testing.T) {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	acc := regexp.MustCompile(`(?m)^accuracy:\n\t.* -run '([^']+)' (\..*)$`).FindSubmatch(mk)
	if acc == nil {
		t.Fatal("Makefile: no accuracy target running the root package with -run '…'")
	}
	racefree := regexp.MustCompile(string(acc[1]))
	listed := map[string]bool{}
	for _, pkg := range strings.Fields(string(acc[2])) {
		listed[filepath.Clean(pkg)] = true
	}
	fn := regexp.MustCompile(`(?m)^func (Test\w*)\(t \*testing\.T\) \{`)
	checked := 0
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != ".":
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir // another module, or not Go
			}
			return nil
		case !strings.HasSuffix(path, "_test.go") || path == "docs_test.go":
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(b)
		for _, m := range fn.FindAllStringSubmatchIndex(src, -1) {
			name := src[m[2]:m[3]]
			end := strings.Index(src[m[1]:], "\n}\n")
			if end < 0 {
				continue
			}
			body := src[m[1] : m[1]+end]
			skipsRace := strings.Contains(body, "if raceEnabled {") && strings.Contains(body, "Skip")
			if !skipsRace && !strings.Contains(body, "needVec(t)") { // needVec skips where vecProbe is off, as under race
				continue
			}
			checked++
			if dir := filepath.Dir(path); !listed[dir] || !racefree.MatchString(name) {
				t.Errorf("%s: %s skips under the race detector but the race-free pass (make accuracy: -run %s in %s) does not run it",
					path, name, racefree, acc[2])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("found no test that skips under the race detector: the check reads nothing")
	}
}

// Every fuzz target in the repository runs in make test: scripts/fuzz-short
// lists each one with its package.
func TestEveryFuzzTargetRuns(t *testing.T) {
	script, err := os.ReadFile("scripts/fuzz-short")
	if err != nil {
		t.Fatal(err)
	}
	listed := regexp.MustCompile(`(?m)^(\S+)\s+(Fuzz\w+)\s+\d+$`)
	have := map[string]bool{}
	for _, m := range listed.FindAllStringSubmatch(string(script), -1) {
		have[filepath.Clean(m[1])+" "+m[2]] = true
	}
	fn := regexp.MustCompile(`(?m)^func (Fuzz\w*)\(f \*testing\.F\) \{`)
	found := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == "bench" || path == "interop" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir // other modules, and hidden directories
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fn.FindAllStringSubmatch(string(b), -1) {
			found++
			if key := filepath.Dir(path) + " " + m[1]; !have[key] {
				t.Errorf("%s: %s is not in scripts/fuzz-short, so make test never fuzzes it", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("found no fuzz target: the check reads nothing")
	}
}
