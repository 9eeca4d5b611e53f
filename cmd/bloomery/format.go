package main

import "fmt"

// binaryUnits are the units of humanBytes above bytes, each 1024 times the
// one before.
var binaryUnits = [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// humanBytes formats a byte count in binary units with one decimal:
// "512 B", "1.5 KiB", "16.0 GiB". It moves to the next unit rather than
// print "1024.0".
func humanBytes(b uint64) string {
	if b < 1024 {
		return fmt.Sprintf("%d B", b)
	}
	v := float64(b) / 1024
	i := 0
	for v >= 1023.95 && i < len(binaryUnits)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", v, binaryUnits[i])
}

// formatRate formats a false-positive rate in scientific notation with
// three significant digits, e.g. "1.00e-02", so that rates of very
// different sizes line up and compare at a glance.
func formatRate(p float64) string {
	return fmt.Sprintf("%.2e", p)
}
