package main

import "testing"

func TestHumanBytes(t *testing.T) {
	tests := []struct {
		in   uint64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{10*1024 - 1, "10.0 KiB"},
		{1<<20 - 1, "1.0 MiB"}, // not "1024.0 KiB"
		{1 << 20, "1.0 MiB"},
		{1266752, "1.2 MiB"},
		{3 << 29, "1.5 GiB"},
		{16 << 30, "16.0 GiB"},
		{1 << 40, "1.0 TiB"},
		{1 << 50, "1.0 PiB"},
		{1 << 60, "1.0 EiB"},
		{1<<64 - 1, "16.0 EiB"},
	}
	for _, tt := range tests {
		if got := humanBytes(tt.in); got != tt.want {
			t.Errorf("humanBytes(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormatRate(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0.01, "1.00e-02"},
		{0.009123, "9.12e-03"},
		{0.5, "5.00e-01"},
		{1e-12, "1.00e-12"},
	}
	for _, tt := range tests {
		if got := formatRate(tt.in); got != tt.want {
			t.Errorf("formatRate(%g) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
