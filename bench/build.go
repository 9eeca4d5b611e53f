package bench

import (
	"fmt"
	"os/exec"
	"path/filepath"
)

// BuildBloomery builds the bloomery command of the main module into dir
// and returns the binary's path. It runs from the bench module's
// directory (the main module is its parent), as the cmd/ programs do.
func BuildBloomery(dir string) (string, error) {
	bin := filepath.Join(dir, "bloomery")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/bloomery")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/bloomery: %v\n%s", err, out)
	}
	return bin, nil
}
