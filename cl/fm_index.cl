/* Lookups in an FM-index of the reversed genome (marose/index_study/fm_index.py): backward
 * search takes a query's bases first to last, the seed's exactly, then backtracks over the
 * right part's bases, depth first, spending at most E substitutions (Liu et al.'s seeds with
 * mismatches, without their lower-bound pruning); each position is found by walking LF from
 * its row to a sampled one. Defines: Q, SEED, LN (Q = SEED + LN), E, SA_STEP (rows between
 * samples of the suffix array, a power of 2). Needs search.cl.
 *
 * Occurrence blocks: 16 words for each 128 rows of the BWT: the count of A, C, G and T before
 * the block; the block's 128 BWT bases, 2 bits each, first lowest (a separator, N or the
 * sentinel stored as A); and 128 bits marking those rows, which stop a walk. */

#define BLOCK_ROWS 128u
#define BLOCK_WORDS 16u

/* Occurrences of base c in the BWT's rows [0, row). */
inline uint occ(__global const uint *blocks, uint row, uint c)
{
    __global const uint *b = blocks + (row / BLOCK_ROWS) * BLOCK_WORDS;
    uint r = row % BLOCK_ROWS, n = b[c];
    uint pattern = c * 0x55555555u;
    for (uint w = 0; w * 16u < r; ++w) {
        uint take = min(r - w * 16u, 16u);
        uint mask = take == 16u ? 0x55555555u : 0x55555555u & ((1u << (2u * take)) - 1u);
        uint x = b[4u + w] ^ pattern;
        n += popcount(~(x | (x >> 1)) & mask);
    }
    if (c == 0u)
        for (uint w = 0; w * 32u < r; ++w) {
            uint take = min(r - w * 32u, 32u);
            n -= popcount(b[12u + w] & (take == 32u ? ~0u : (1u << take) - 1u));
        }
    return n;
}

/* The genome coordinate of the base that begins the row's suffix (the reversed genome's). */
inline uint locate(__global const uint *blocks, __global const uint *C, __global const uint *samples,
                   __global const uint *special_rows, __global const uint *special_at,
                   uint n_special, uint row)
{
    for (uint steps = 0;; ++steps) {
        if (row % SA_STEP == 0u)
            return samples[row / SA_STEP] - steps;
        __global const uint *b = blocks + (row / BLOCK_ROWS) * BLOCK_WORDS;
        uint r = row % BLOCK_ROWS;
        if ((b[12u + r / 32u] >> (r % 32u)) & 1u)
            return special_at[lower_bound(special_rows, n_special, row)] - steps;
        uint c = (b[4u + r / 16u] >> (2u * (r % 16u))) & 3u;
        row = C[c] + occ(blocks, row, c);
    }
}

__kernel void fm_lookup(__global const uint *blocks, __global const uint *C, uint n_rows,
                        __global const uint *samples, __global const uint *special_rows,
                        __global const uint *special_at, uint n_special,
                        __global const ulong *queries, uint n, __global const uint *offsets,
                        __global uint *out, uint emit)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    uint written = emit ? offsets[i] : 0u;
    ulong query = queries[i];
    uint lo = 0u, hi = n_rows;
    for (uint k = 0; k < SEED && lo < hi; ++k) {
        uint c = (uint)(query >> (2u * (Q - 1u - k))) & 3u;
        lo = C[c] + occ(blocks, lo, c);
        hi = C[c] + occ(blocks, hi, c);
    }
    uint los[LN + 1], his[LN + 1], next[LN + 1], errors[LN + 1];
    int d = lo < hi ? 0 : -1;
    los[0] = lo;
    his[0] = hi;
    next[0] = 0u;
    errors[0] = 0u;
    while (d >= 0) {
        if (d == LN) {
            if (emit)
                for (uint row = los[d]; row < his[d]; ++row)
                    out[written + row - los[d]] =
                        locate(blocks, C, samples, special_rows, special_at, n_special, row) - (Q - 1u);
            written += his[d] - los[d];
            --d;
            continue;
        }
        if (next[d] == 4u) {
            --d;
            continue;
        }
        uint c = next[d]++;
        uint spent = errors[d] + (c != ((uint)(query >> (2u * (LN - 1u - d))) & 3u));
        if (spent > E)
            continue;
        uint child_lo = C[c] + occ(blocks, los[d], c), child_hi = C[c] + occ(blocks, his[d], c);
        if (child_lo >= child_hi)
            continue;
        ++d;
        los[d] = child_lo;
        his[d] = child_hi;
        errors[d] = spent;
        next[d] = 0u;
    }
    if (!emit)
        out[i] = written;
}
