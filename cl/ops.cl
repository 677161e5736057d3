/* Prepended to every program (marose.device): integer operations written out inline. PyPI's
 * PoCL 3.0 calls its builtins (min, max, mul_hi, select, vload4, ...) through its kernel library
 * instead of inlining them, a call at every use in a hot loop; its prefilter ran 4.5x slower than
 * under Debian's PoCL 3.1, which inlines them. (rotate stays a builtin: the shifts it would be
 * written as become llvm.fshl, which Oclgrind lacks.) */

/* min and max of integers (the builtins' names, so that every kernel takes them). The arguments
 * may be evaluated twice: pass none with side effects. Not under Oclgrind, which lacks the LLVM
 * intrinsics (llvm.usub.sat) that the optimizer makes of some of these selects. */
#ifndef OCLGRIND
#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
#endif

/* The high 32 bits of a * b. */
inline uint mul_hi32(uint a, uint b)
{
    return (uint)(((ulong)a * b) >> 32);
}

inline uint4 mul_hi32x4(uint4 a, uint b)
{
    return (uint4)(mul_hi32(a.s0, b), mul_hi32(a.s1, b), mul_hi32(a.s2, b), mul_hi32(a.s3, b));
}

/* A function inlined wherever the compiler takes clang's attribute: PoCL left next_column a call
 * at every column of row_loci and traceback, its words' state passed through memory. */
#if defined(__clang__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* Asks for the cache line holding p where the program is built with PREFETCH=1 (a CPU) and the
 * compiler offers it (clang's builtin: PoCL). */
#if defined(PREFETCH) && PREFETCH && defined(__has_builtin)
#if __has_builtin(__builtin_prefetch)
#define PREFETCH_LINE(p) __builtin_prefetch(p)
#endif
#endif
#ifndef PREFETCH_LINE
#define PREFETCH_LINE(p)
#endif
