package redistest

import (
	"strconv"
	"strings"
)

// CommandCalls reads the text of INFO commandstats: calls per command,
// in lower case ("cmdstat_getrange:calls=3,…" is getrange 3).
func CommandCalls(info string) map[string]int {
	calls := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		v, _ := strconv.Atoi(n)
		calls[strings.TrimPrefix(name, "cmdstat_")] = v
	}
	return calls
}
