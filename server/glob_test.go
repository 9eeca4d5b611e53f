package server

import "testing"

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
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
		{"[", "[", true},
		{"[abc", "[abc", true},
		{"", "", true},
		{"", "x", false},
		{"**", "x", true},
		{"a\\", "a\\", true},
	}
	for _, c := range cases {
		if got := globMatch(c.pattern, c.s); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

func FuzzGlobMatch(f *testing.F) {
	f.Add("h*l?o[a-z]\\*", "hello")
	f.Fuzz(func(t *testing.T, pattern, s string) {
		globMatch(pattern, s) // must not panic or hang
		if !globMatch("*", s) {
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
