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

// func testBlockVec7(blk *[8]uint64, w uint64, k uint32) bool
//
// Whether the first k (1-7) probes of probe word w are set in blk.
TEXT ·testBlockVec7(SB), NOSPLIT, $0-25
	MOVQ blk+0(FP), AX
	MOVL k+16(FP), CX
	VMOVDQU64 (AX), Z0              // the block's 8 words
	VPBROADCASTQ w+8(FP), Z1
	VPSRLVQ fieldShifts<>(SB), Z1, Z1 // lane j: w >> 9j, probe j's field at the bottom
	VPSRLQ $6, Z1, Z2               // the probe's word in bits 0-2, all VPERMQ reads
	VPERMQ Z0, Z2, Z3               // lane j: the probe's word
	VPRORVQ Z1, Z3, Z3              // rotated so that the probe's bit (field mod 64) is bit 0
	VPTESTMQ.BCST one<>(SB), Z3, K1 // K1 bit j: probe j is set
	MOVL $1, DX                     // K2: the k lanes wanted
	SHLL CX, DX
	DECL DX
	KMOVW DX, K2
	KANDNW K2, K1, K3               // K3: the wanted probes that are not set
	KORTESTW K3, K3
	SETEQ ret+24(FP)
	VZEROUPPER
	RET
