package main

import (
	"slices"
	"testing"
)

func TestSavers(t *testing.T) {
	targets := []*target{{name: "bloomery"}, {name: "redisbloom"}, {name: "redisbloom+aof"}}
	cases := []struct {
		name          string
		before, after []persistState
		want          []string
	}{
		{"none", []persistState{{1, false}, {0, false}, {2, false}}, []persistState{{1, false}, {0, false}, {2, false}}, nil},
		{"finished between", []persistState{{1, false}, {0, false}, {2, false}}, []persistState{{2, false}, {0, false}, {2, false}}, []string{"bloomery"}},
		{"under way at the start", []persistState{{0, false}, {0, true}, {0, false}}, []persistState{{0, false}, {1, false}, {0, false}}, []string{"redisbloom"}},
		{"under way at the end", []persistState{{0, false}, {0, false}, {0, false}}, []persistState{{0, true}, {0, false}, {0, true}}, []string{"bloomery", "redisbloom+aof"}},
	}
	for _, c := range cases {
		if got := savers(targets, c.before, c.after); !slices.Equal(got, c.want) {
			t.Errorf("%s: savers %q, want %q", c.name, got, c.want)
		}
	}
	s := []sample{{}, {savers: []string{"bloomery"}}, {savers: []string{"bloomery", "redisbloom"}}}
	if got, want := fmtSavers(s), "· bloomery bloomery+redisbloom"; got != want {
		t.Errorf("fmtSavers %q, want %q", got, want)
	}
}
