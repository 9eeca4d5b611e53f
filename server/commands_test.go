package server

import "testing"

func TestEqualLower(t *testing.T) {
	for _, tc := range []struct {
		name, lower string
		want        bool
	}{
		{"BF.ADD", "bf.add", true},
		{"bf.add", "bf.add", true},
		{"Bf.AdD", "bf.add", true},
		{"BF.ADDX", "bf.add", false},
		{"BF.AD", "bf.add", false},
		{"BF_ADD", "bf.add", false},
		{"", "", true},
		{"\xc0", "\xe0", false}, // only ASCII letters fold
	} {
		if got := equalLower([]byte(tc.name), tc.lower); got != tc.want {
			t.Errorf("equalLower(%q, %q) = %v, want %v", tc.name, tc.lower, got, tc.want)
		}
	}
}

// TestLastCommandCache: a connection that changes commands, cases and
// unknown names gets each one's own reply (the per-connection cache of
// the last command never answers for another).
func TestLastCommandCache(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"BF.ADD", "k", "a"}, rawInt(1)},
		{[]string{"bf.add", "k", "a"}, rawInt(0)},
		{[]string{"BF.EXISTS", "k", "a"}, rawInt(1)},
		{[]string{"BF.ADDX", "k", "a"}, "-ERR unknown command 'BF.ADDX', with args beginning with: 'k' 'a' \r\n"},
		{[]string{"Bf.ExIsTs", "k", "b"}, rawInt(0)},
		{[]string{"PING"}, rawStatus("PONG")},
	} {
		if got := c.do(step.args...); got != step.want {
			t.Fatalf("%q: %q, want %q", step.args, got, step.want)
		}
	}
}
