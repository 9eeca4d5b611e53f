//go:build gc && !purego

#include "textflag.h"

// The blocked layout's Test with AVX-512F (probe_vec.go): the probes of
// one probe word at once, one 64-bit lane each. Probe j is the 9-bit
// field w>>(9j): bits 6-8 its word in the block, bits 0-5 its bit there
// (probe.go, "Where an item's bits live").

// Lane j holds probe j's 9-bit field at the bottom after this shift.
DATA fieldShifts<>+0(SB)/8, $0
DATA fieldShifts<>+8(SB)/8, $9
DATA fieldShifts<>+16(SB)/8, $18
DATA fieldShifts<>+24(SB)/8, $27
DATA fieldShifts<>+32(SB)/8, $36
DATA fieldShifts<>+40(SB)/8, $45
DATA fieldShifts<>+48(SB)/8, $54
DATA fieldShifts<>+56(SB)/8, $0
GLOBL fieldShifts<>(SB), RODATA|NOPTR, $64

DATA one<>+0(SB)/8, $1
GLOBL one<>(SB), RODATA|NOPTR, $8

// PROBES sets bit j of mask register k where probe j of the probe word
// broadcast in zw is set in the block held in Z0: shift lane j by 9j so
// that it holds probe j's field at the bottom; VPERMQ picks the field's
// word (bits 6-8, all it reads); a rotate by the field brings the
// probe's bit (bits 0-5) to bit 0. Clobbers zw, zi and zs.
#define PROBES(zw, zi, zs, k) \
	VPSRLVQ fieldShifts<>(SB), zw, zw; \
	VPSRLQ $6, zw, zi; \
	VPERMQ Z0, zi, zs; \
	VPRORVQ zw, zs, zs; \
	VPTESTMQ.BCST one<>(SB), zs, k

// func testBlockVec7(blk *[8]uint64, w uint64, k uint32) bool
//
// Whether the first k (1-7) probes of probe word w are set in blk.
TEXT ·testBlockVec7(SB), NOSPLIT, $0-25
	MOVQ blk+0(FP), AX
	MOVL k+16(FP), CX
	VMOVDQU64 (AX), Z0              // the block's 8 words
	VPBROADCASTQ w+8(FP), Z1
	PROBES(Z1, Z2, Z3, K1)          // K1 bit j: probe j is set
	MOVL $1, DX                     // K2: the k lanes wanted
	SHLL CX, DX
	DECL DX
	KMOVW DX, K2
	KANDNW K2, K1, K3               // K3: the wanted probes that are not set
	KORTESTW K3, K3
	SETEQ ret+24(FP)
	VZEROUPPER
	RET

// Lane masks of testBlockVec14 by k: bits 0-6 the first probe word's
// seven lanes, bits 8-14 the first k-7 lanes of the second.
DATA lanes14<>+0(SB)/2, $0x017f
DATA lanes14<>+2(SB)/2, $0x037f
DATA lanes14<>+4(SB)/2, $0x077f
DATA lanes14<>+6(SB)/2, $0x0f7f
DATA lanes14<>+8(SB)/2, $0x1f7f
DATA lanes14<>+10(SB)/2, $0x3f7f
DATA lanes14<>+12(SB)/2, $0x7f7f
GLOBL lanes14<>(SB), RODATA|NOPTR, $14

// func testBlockVec14(blk *[8]uint64, h1, h2 uint64, k uint32) bool
//
// Whether the first k (8-14) probes of h = (h1, h2) are set in blk: the
// 7 of probe word h2 and the first k-7 of probe word
// mix64(h2 + golden) ^ h1 (hash.go's probeWord(h, 1)).
TEXT ·testBlockVec14(SB), NOSPLIT, $0-33
	MOVQ blk+0(FP), AX
	MOVQ h2+16(FP), BX
	MOVL k+24(FP), CX
	VMOVDQU64 (AX), Z0              // the block's 8 words
	VPBROADCASTQ BX, Z1

	MOVQ $0x9e3779b97f4a7c15, DX    // BX = probeWord(h, 1)
	ADDQ DX, BX
	MOVQ BX, DX
	SHRQ $33, DX
	XORQ DX, BX
	MOVQ $0xff51afd7ed558ccd, DX
	IMULQ DX, BX
	MOVQ BX, DX
	SHRQ $33, DX
	XORQ DX, BX
	MOVQ $0xc4ceb9fe1a85ec53, DX
	IMULQ DX, BX
	MOVQ BX, DX
	SHRQ $33, DX
	XORQ DX, BX
	XORQ h1+8(FP), BX
	VPBROADCASTQ BX, Z4

	PROBES(Z1, Z2, Z3, K1)
	PROBES(Z4, Z5, Z7, K2)
	KUNPCKBW K1, K2, K1             // bits 0-7: h2's lanes, 8-15: the second word's
	LEAQ lanes14<>(SB), DX
	KMOVW -16(DX)(CX*2), K2         // the wanted lanes for k
	KANDNW K2, K1, K3
	KORTESTW K3, K3
	SETEQ ret+32(FP)
	VZEROUPPER
	RET
