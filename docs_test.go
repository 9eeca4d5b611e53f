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

// A test that skips under the race detector must still run in make
// test: the race-free pass (make accuracy) runs the tests named TestFPR…
// and TestNoRace…, so every such test must be named so.
func TestRaceSkipsRunSomewhere(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`(?m)^func (Test\w*)\(t \*testing\.T\) \{`)
	checked := 0
	for _, file := range files {
		if file == "docs_test.go" {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		for _, m := range fn.FindAllStringSubmatchIndex(src, -1) {
			name := src[m[2]:m[3]]
			end := strings.Index(src[m[1]:], "\n}\n")
			if end < 0 {
				continue
			}
			body := src[m[1] : m[1]+end]
			if !strings.Contains(body, "if raceEnabled {") || !strings.Contains(body, "Skip") {
				continue
			}
			checked++
			if !strings.HasPrefix(name, "TestFPR") && !strings.HasPrefix(name, "TestNoRace") {
				t.Errorf("%s: %s skips under the race detector but the race-free pass does not run it: name it TestFPR… or TestNoRace…", file, name)
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no test that skips under the race detector: the check reads nothing")
	}
}
