// Package hugepage asks Linux to back large arrays with transparent huge
// pages (madvise MADV_HUGEPAGE), so that random probes into a large
// filter miss the TLB less often. Best effort: where it cannot (another
// OS, THP disabled, an old kernel) nothing changes but speed. Safe for
// concurrent use.
package hugepage

// Min is the smallest array worth backing with huge pages.
const Min = 4 << 20
