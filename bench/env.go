package bench

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
)

// PrintEnv prints one line: the Go version, the platform, the CPUs, and
// the version of each module in deps that the program is built with.
func PrintEnv(deps ...string) {
	fmt.Printf("%s %s/%s, %d CPUs, GOMAXPROCS %d", runtime.Version(), runtime.GOOS, runtime.GOARCH,
		runtime.NumCPU(), runtime.GOMAXPROCS(0))
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if slices.Contains(deps, d.Path) {
				fmt.Printf(", %s %s", d.Path, d.Version)
			}
		}
	}
	fmt.Println()
}
