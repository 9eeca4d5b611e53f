package redisfilter

import (
	"strings"
	"testing"

	"github.com/bloomery/bloom"
)

// FuzzParseScalableMeta: any metadata hash (fields and values joined by
// newlines) parses to an error or to metadata whose fields read back the
// same, never a panic.
func FuzzParseScalableMeta(f *testing.F) {
	for _, growth := range []bloom.Growth{{}, {Expansion: 2}} {
		plan, err := bloom.NewScalablePlan(100, 0.01, bloom.WithGrowth(growth))
		if err != nil {
			f.Fatal(err)
		}
		m, err := newScalableMeta("seed", plan, 0, DefaultMaxBytes)
		if err != nil {
			f.Fatal(err)
		}
		var lines []string
		for _, v := range m.fields() {
			lines = append(lines, v.(string))
		}
		f.Add(strings.Join(lines, "\n"))
		f.Add(strings.Join(lines[:len(lines)-2], "\n")) // without the writes token
	}
	f.Fuzz(func(t *testing.T, text string) {
		parts := strings.Split(text, "\n")
		if len(parts)%2 != 0 || len(parts) > 400 {
			return
		}
		h := map[string]string{}
		for i := 0; i < len(parts); i += 2 {
			h[parts[i]] = parts[i+1]
		}
		m, err := parseScalableMeta("seed", h)
		if err != nil {
			return
		}
		if _, hasToken := h["writes"]; hasToken != m.tracked {
			t.Fatalf("tracked %v for %v", m.tracked, h)
		}
		back := map[string]string{}
		fs := m.fields()
		for i := 0; i < len(fs); i += 2 {
			back[fs[i].(string)] = fs[i+1].(string)
		}
		back["writes"] = h["writes"]
		if !m.tracked {
			delete(back, "writes")
		}
		again, err := parseScalableMeta("seed", back)
		if err != nil || again.id != m.id || len(again.subs) != len(m.subs) || again.items != m.items || again.tracked != m.tracked {
			t.Fatalf("%v does not read back: %v", h, err)
		}
	})
}
