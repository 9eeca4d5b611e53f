package server

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "anything", true},
		{"*", "", false}, // the commands treat * alone as "every key"
		{"", "", true},
		{"", "x", false},
		{"**", "x", true},
		{"h?llo", "hello", true},
		{"h?llo", "hllo", false},
		{"h*llo", "heeeello", true},
		{"h*llo", "hello world", false},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[a-b]llo", "hcllo", false},
		{"h[b-a]llo", "hallo", true},
		{`h\*llo`, "h*llo", true},
		{`h\*llo`, "hello", false},
		{"user:*:seen", "user:42:seen", true},
		{"user:*:seen", "user:42:seen:x", false},
		{"*a*b*c*", "xxaxxbxxcxx", true},
		{"*a*b*c*", "xxaxxcxxbxx", false},
		{"a*", "b", false},
		{"a*", "a", true},
		{`a\`, `a\`, true},
		// Redis's class quirks: an unterminated class takes the rest of
		// the pattern, a range may end in ']', and "[" matches nothing.
		{"[", "[", false},
		{"[abc", "b", true},
		{"[abc", "[abc", false},
		{"[^", "x", true},
		{"[a-]", "^", true},
		{"[a-]", "-", false},
		{"[]]", "]", false},
		{"[^]", "]", true},
		{`[\]`, "]", true},
		{`[\a-c]`, "b", false},
		{"[a-", "-", true},
	}
	for _, c := range cases {
		if got := globMatch(c.pattern, c.s); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

// TestGlobLongClass: a class longer than longClass is decoded into a
// bitmap and answers as a short one read in place.
func TestGlobLongClass(t *testing.T) {
	members := "[" + strings.Repeat("xyz", 20) + "a-c\\]" // 66 bytes
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"*" + members + "]!", "--b!", true},
		{"*" + members + "]!", "--]!", true},
		{"*" + members + "]!", "--d!", false},
		{"[^" + members[1:] + "]", "d", true},
		{"[^" + members[1:] + "]", "y", false},
		{"*" + members, "kkkz", true}, // unterminated: the rest of the pattern
	} {
		g := compileGlob(tc.pattern)
		if len(g.sets) != 1 {
			t.Fatalf("%q: %d long classes compiled, want 1", tc.pattern, len(g.sets))
		}
		if got := g.match(tc.s); got != tc.want {
			t.Errorf("match(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

// globKeys and globPatterns are the table compared with redis-server.
var (
	globKeys = []string{
		"", "a", "b", "c", "x", "ab", "abc", "aab", "ba", "[", "]", "^", "-", `\`, "*", "?",
		"[abc", "a]", "a-", "hello", "hallo", "h*llo", "user:1", "user:10", "user:1:seen",
		"a\x00b", "\xff", "é",
	}
	globPatterns = []string{
		"", "*", "**", "?", "??", "*?", "?*", "a*", "*a", "*a*", "a*b", "a?b", "*b*c*",
		"[", "[a", "[abc", "[^", "[^a", "[a-c]", "[c-a]", "[a-]", "[a-]]", "[-a]", "[]", "[]]", "[]a]",
		"[^]", "[^]]", `[\]`, `[\]]`, `[\a-c]`, `[a\-c]`, "[a-", "[a-c", `\`, `\*`, `\?`, `\[`, `a\`,
		"h[ae]llo", "h[^e]llo", "user:*", "user:?", "user:*:seen", "*[", "*]", "[*]", "[?]",
		"a\x00*", "[\x00-\xff]", "[\x80-\x7f]", "[a-\xc3]", "[\xc3-a]", "\xff", "?\xa9",
	}
)

// TestGlobMatchesRedis compares KEYS on redis-server with globMatch over
// the same keys, for a table of patterns and random ones over the
// characters that mean something.
func TestGlobMatchesRedis(t *testing.T) {
	red := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: red.Addr(), Protocol: 2})
	defer rdb.Close()
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(11, 11))
	keys := slices.Clone(globKeys)
	for range 60 {
		keys = append(keys, randomGlobString(rnd, 5))
	}
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	for _, k := range keys {
		if err := rdb.Set(ctx, k, "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("xyz", 12)
	patterns := append(slices.Clone(globPatterns), "*["+long+"a-c]", "[^"+long+"a-c]", "*["+long+"\\]*", "["+long+"a")
	for range 400 {
		patterns = append(patterns, randomGlobString(rnd, 8))
	}
	for _, p := range patterns {
		want, err := rdb.Keys(ctx, p).Result()
		if err != nil {
			t.Fatalf("KEYS %q: %v", p, err)
		}
		var got []string
		for _, k := range keys {
			if p == "*" || globMatch(p, k) {
				got = append(got, k)
			}
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("pattern %q: we match %q, redis-server %q", p, got, want)
		}
	}
}

// randomGlobString is up to n bytes from an alphabet of pattern syntax
// and a few plain bytes.
func randomGlobString(rnd *rand.Rand, n int) string {
	const alphabet = "ab-[]^*?\\\x00\xc3"
	b := make([]byte, rnd.IntN(n+1))
	for i := range b {
		b[i] = alphabet[rnd.IntN(len(alphabet))]
	}
	return string(b)
}

// globReference is match by memoised recursion over (pattern, string)
// positions: the definition that backtracking to the last star (and
// compileGlob's collapsed stars and bitmaps) only shortcut.
func globReference(g *glob, s string) bool {
	if len(s) == 0 {
		return len(g.pat) == 0
	}
	memo := map[[2]int]bool{}
	var rec func(p, i int) bool
	rec = func(p, i int) bool {
		if v, ok := memo[[2]int{p, i}]; ok {
			return v
		}
		var v bool
		switch {
		case p == len(g.pat):
			v = i == len(s)
		case g.pat[p] == '*':
			v = rec(p+1, i) || (i < len(s) && rec(p, i+1))
		case i < len(s):
			next, ok := g.one(p, s[i])
			v = ok && rec(next, i+1)
		}
		memo[[2]int{p, i}] = v
		return v
	}
	return rec(0, 0)
}

func FuzzGlobMatch(f *testing.F) {
	f.Add("h*l?o[a-z]\\*", "hello")
	f.Add("*[a-]x*", "]x")
	f.Add("*"+strings.Repeat("?", 40)+"[", strings.Repeat("a", 50))
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if len(pattern) > 200 || len(s) > 200 {
			return // the reference is quadratic in memory
		}
		g := compileGlob(pattern)
		raw := &glob{src: pattern, pat: pattern} // no collapsed stars, no bitmaps
		if got, want := g.match(s), globReference(raw, s); got != want {
			t.Fatalf("match(%q, %q) = %v, the reference says %v", pattern, s, got, want)
		}
		if s != "" && !globMatch("*", s) {
			t.Fatalf("* does not match %q", s)
		}
		if !globMatch(escapeGlob(s), s) || globMatch(escapeGlob(s)+"x", s) {
			t.Fatalf("the escaped %q does not match exactly itself", s)
		}
	})
}

// escapeGlob makes s a pattern matching exactly s.
func escapeGlob(s string) string {
	var b []byte
	for i := range len(s) {
		switch s[i] {
		case '*', '?', '[', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}
