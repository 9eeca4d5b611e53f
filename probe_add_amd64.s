//go:build gc && !purego

#include "textflag.h"

// The blocked layout's Add in scalar assembly (probe_add_amd64.go).
// Probe j of a probe word w is the 9-bit field w>>(9j): bits 6-8 its
// word in the block, bits 0-5 its bit there (probe.go, "Where an item's
// bits live").
// BTSQ sets a bit of a register and leaves the bit's old value in the
// carry flag, which ADCL adds to a count of the probes found set: 10
// instructions a probe with the loop, against about 14 for the Go
// probe that builds the bit's mask and keeps what it changed.

// PROBE sets the probe at the low 9 bits of w in the block at blk and
// adds 1 to n if it was set already. It clobbers DX and R8.
#define PROBE(blk, w, n) \
	MOVQ w, DX \
	SHRQ $3, DX \
	ANDL $0x38, DX \
	MOVQ (blk)(DX*1), R8 \
	BTSQ w, R8 \
	ADCL $0, n \
	MOVQ R8, (blk)(DX*1)

// func addBlockAsm(blk *[8]uint64, h1, h2 uint64, k uint32, inserted *uint64) bool
TEXT ·addBlockAsm(SB), NOSPLIT, $0-41
	MOVQ blk+0(FP), DI
	MOVQ h2+16(FP), SI
	MOVL k+24(FP), R9
	XORL AX, AX                     // probes found set
	MOVL R9, BX
	MOVL $7, CX
	CMPL BX, CX
	CMOVLHI CX, BX                  // BX = min(k, 7): probes of h2
	SUBL BX, R9                     // R9 = k - BX: probes of the second word
	TESTL BX, BX
	JZ done

first:
	PROBE(DI, SI, AX)
	SHRQ $9, SI
	DECL BX
	JNZ first

	TESTL R9, R9
	JZ done
	MOVQ h2+16(FP), SI              // SI = probeWord(h, 1)
	MOVQ $0x9e3779b97f4a7c15, DX
	ADDQ DX, SI
	MOVQ SI, DX
	SHRQ $33, DX
	XORQ DX, SI
	MOVQ $0xff51afd7ed558ccd, DX
	IMULQ DX, SI
	MOVQ SI, DX
	SHRQ $33, DX
	XORQ DX, SI
	MOVQ $0xc4ceb9fe1a85ec53, DX
	IMULQ DX, SI
	MOVQ SI, DX
	SHRQ $33, DX
	XORQ DX, SI
	XORQ h1+8(FP), SI

second:
	PROBE(DI, SI, AX)
	SHRQ $9, SI
	DECL R9
	JNZ second

done:
	XORL R10, R10
	CMPL AX, k+24(FP)
	SETNE R10B                      // new: a probe was unset
	MOVQ inserted+32(FP), R11
	ADDQ R10, (R11)
	MOVB R10B, ret+40(FP)
	RET
