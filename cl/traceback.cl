/* Canonical alignments of whole reads at their loci, one work-item per locus (see
 * marose/align.py, traceback): the read against the genome slice [a, e] that ends at the
 * locus end e, walked back from (L, m) with ties preferring the diagonal, then I, then D, and
 * stopping when the read is consumed. Operations: 0 match, 1 mismatch, 2 I, 3 D.
 *
 * Only the 2k + 1 diagonals j - i in [m - L - k, m - L + k] are computed (Ukkonen band); cells
 * outside count as unreachable. This gives the full DP's traceback whenever D(L, m) <= k:
 * - Leaving diagonal d for the end diagonal m - L takes at least |d - (m - L)| indels, so every
 *   path of cost <= k into (L, m) stays in the band. The banded value of a cell is the best
 *   over the paths inside the band, so it is never below the full one and equals it wherever
 *   an optimal path into the cell stays in the band; in particular at (L, m).
 * - Walking back, a neighbour passes the tie test of the full DP (its value plus the step cost
 *   equals the current cell) only if it lies on an optimal path into (L, m) of cost <= k; then
 *   its optimal paths stay in the band and its banded value is exact, so the banded test
 *   passes too. A neighbour that fails in the full DP has value plus cost above the current
 *   cell, and the banded value can only be larger, so it fails too. Each step therefore picks
 *   the same move, and by induction the walk visits the same cells with exact values.
 * The walk only visits cells of finite value, whose chosen predecessors are inside the band.
 * A locus with no alignment within k gets start UINT_MAX, no operations, and is counted in
 * untraced.
 *
 * A locus may need no table: where the read's mismatches h along the end diagonal (base i at
 * column m - L + i) are the locus' distance D(L, m), every cell of that diagonal holds its
 * prefix's mismatches (a cheaper path into one would make a cheaper one into (L, m)), so each
 * step back passes the diagonal's tie test and the walk is the diagonal. h = D(L, m) wherever
 * h <= 1: D <= h always, and D = 0 only on the diagonal itself. For 1 < h <= k, D(L, m) is
 * computed by Myers' bit-vectors over the slice (slice_distance: far fewer steps than the
 * table's cells), and the diagonal is taken where they agree.
 *
 * On a CPU (TRACE_BITS=1) the table is not kept: Myers' bit-vectors of every column of the slice
 * are (trace_by_columns), and the walk back reads the cells it tests from them. They are the full
 * table's values, whose walk is the band's (above), and take far fewer steps than the band's
 * cells. A GPU keeps the band: the columns take kilobytes of private memory a work-item.
 *
 * Needs extend.cl, -D MAX_LEN= (longest read), -D MAX_K= (largest k), -D MAX_WORDS= and
 * -D TRACE_BITS= (0 or 1). */

#define BAND (2 * MAX_K + 1)
#define BAND_WORDS ((BAND + 31) / 32)
#define OPS_WIDTH (MAX_LEN + MAX_K)
#define UNREACHABLE 0x7fff
#define OP_MATCH 0
#define OP_MISMATCH 1
#define OP_INS 2
#define OP_DEL 3

/* Zeros after a row's operations (the buffer is not cleared beforehand). */
inline void zero_from(__global uchar *row, uint from)
{
    for (uint j = from; j < OPS_WIDTH; ++j)
        row[j] = 0;
}

/* D(L, m): the read's least distance to a substring of text[0, m) ending at m - 1, or some
 * value above h once it surely exceeds h (the bottom cell falls by at most 1 a column). */
inline int slice_distance(__global const uchar *read, uint length, __global const uchar *text, int m, int h)
{
    uint words = (length + WORD_BITS - 1u) / WORD_BITS, last = (length - 1u) % WORD_BITS;
    ulong peq[MAX_WORDS * 4], pv[MAX_WORDS], mv[MAX_WORDS];
    read_masks(read, length, peq);
    reset_column(words, pv, mv);
    int score = (int)length;
    for (int j = 0; j < m && score - (m - j) <= h; ++j)
        score += next_column(peq, pv, mv, words, last, text[j]);
    return score;
}

#if TRACE_BITS
#define COLUMNS (MAX_LEN + MAX_K + 1)

/* D[i] of a column of the free-start table from its vertical deltas (D[0] = 0). */
inline int column_value(const ulong *pv, const ulong *mv, int i)
{
    int value = 0;
    for (int w = 0; w < MAX_WORDS && (int)WORD_BITS * w < i; ++w) {
        int rows = min((int)WORD_BITS, i - (int)WORD_BITS * w);
        ulong below = rows == (int)WORD_BITS ? ~0UL : (1UL << rows) - 1UL;
        value += (int)popcount(pv[w] & below) - (int)popcount(mv[w] & below);
    }
    return value;
}

/* The canonical alignment of the read against text[0, m) ending at m - 1, walked back from (L, m)
 * over the vertical deltas of every column (column j after text base j - 1): into row (its
 * operations first to last, zeros after), its start in the slice at *start; returns the count
 * of operations, or 0 when D(L, m) > k. */
inline uint trace_by_columns(__global const uchar *read, int length, __global const uchar *text, int m, uint k,
                             __global uchar *row, int *start)
{
    uint words = ((uint)length + WORD_BITS - 1u) / WORD_BITS, last = ((uint)length - 1u) % WORD_BITS;
    ulong peq[MAX_WORDS * 4], pvs[COLUMNS * MAX_WORDS], mvs[COLUMNS * MAX_WORDS];
    read_masks(read, (uint)length, peq);
    reset_column(words, pvs, mvs);
    for (int j = 1; j <= m; ++j) {
        for (uint w = 0; w < words; ++w) {
            pvs[j * MAX_WORDS + w] = pvs[(j - 1) * MAX_WORDS + w];
            mvs[j * MAX_WORDS + w] = mvs[(j - 1) * MAX_WORDS + w];
        }
        next_column(peq, pvs + j * MAX_WORDS, mvs + j * MAX_WORDS, words, last, text[j - 1]);
    }
    int d = column_value(pvs + m * MAX_WORDS, mvs + m * MAX_WORDS, length);
    if (d > (int)k)
        return 0u;
    uchar walked[MAX_LEN + MAX_K];  /* last to first */
    uint count = 0;
    int i = length, j = m;
    while (i > 0) {
        int r = i - 1;
        ulong bit = 1UL << (r % (int)WORD_BITS);
        int at = j * MAX_WORDS + r / (int)WORD_BITS;
        int up = d - ((pvs[at] & bit) ? 1 : (mvs[at] & bit) ? -1 : 0);  /* D[i - 1][j] */
        uchar code = read[r];
        bool mismatch = j > 0 && (code >= 4 || code != text[j - 1]);
        int diag = j > 0 ? column_value(pvs + (j - 1) * MAX_WORDS, mvs + (j - 1) * MAX_WORDS, r) + mismatch : d + 1;
        if (diag == d) {
            walked[count++] = mismatch ? OP_MISMATCH : OP_MATCH;
            d -= mismatch;
            --i;
            --j;
        } else if (up + 1 == d) {
            walked[count++] = OP_INS;
            d = up;
            --i;
        } else {
            walked[count++] = OP_DEL;
            --d;
            --j;
        }
    }
    for (uint o = 0; o < count; ++o)
        row[o] = walked[count - 1u - o];
    zero_from(row, count);
    *start = j;
    return count;
}
#endif

__kernel void traceback(__global const uchar *read_codes, __global const uint *read_offset,
                        __global const uint *read_length, __global const uchar *genome,
                        __global const uint *loci_read, __global const uint *loci_end,
                        __global const uint *slice_start, uint n, uint k,
                        __global uint *starts, __global uchar *ops, __global uint *counts,
                        __global uint *untraced)
{
    uint t = get_global_id(0);
    if (t >= n)
        return;
    uint r = loci_read[t];
    int length = (int)read_length[r];
    __global const uchar *read = read_codes + read_offset[r];
    uint a = slice_start[t];
    __global const uchar *text = genome + a;
    int m = (int)(loci_end[t] - a) + 1;
    int band = 2 * (int)k + 1;
    int shift = m - length - (int)k;  /* column j of band cell b in row i is i + shift + b */
    __global uchar *row = ops + (size_t)t * OPS_WIDTH;
    if (m >= length) {
        /* the diagonal's operations written as they are counted: the walk below writes the whole
           row again where there are more mismatches than the diagonal may take (the columns'
           walk finds such a diagonal itself) */
        int h = 0, most = TRACE_BITS ? min(1, (int)k) : (int)k;
        for (int i = 0; i < length && h <= most; ++i) {
            bool mismatch = read[i] >= 4 || read[i] != text[m - length + i];
            row[i] = mismatch ? OP_MISMATCH : OP_MATCH;
            h += mismatch;
        }
        if (h <= most && (h <= 1 || slice_distance(read, (uint)length, text, m, h) == h)) {
            zero_from(row, (uint)length);
            starts[t] = a + (uint)(m - length);
            counts[t] = (uint)length;
            return;
        }
    }

#if TRACE_BITS
    int start = 0;
    uint walked = trace_by_columns(read, length, text, m, k, row, &start);
    starts[t] = walked ? a + (uint)start : UINT_MAX;
    counts[t] = walked;
    if (!walked) {
        zero_from(row, 0u);
        atomic_inc(untraced);
    }
#else
    /* Bit b of a row: the move back from band cell b is diagonal, or else I; neither is D. */
    uint diag_bits[MAX_LEN * BAND_WORDS], ins_bits[MAX_LEN * BAND_WORDS];
    int prev[BAND + 1], cur[BAND + 1];
    for (int b = 0; b < band; ++b) {
        int j = shift + b;
        prev[b] = 0 <= j && j <= m ? 0 : UNREACHABLE;
    }
    prev[band] = UNREACHABLE;

    for (int i = 1; i <= length; ++i) {
        uchar code = read[i - 1];
        __private uint *diag_row = diag_bits + (i - 1) * BAND_WORDS;
        __private uint *ins_row = ins_bits + (i - 1) * BAND_WORDS;
        for (int w = 0; w < BAND_WORDS; ++w) {
            diag_row[w] = 0u;
            ins_row[w] = 0u;
        }
        int left = UNREACHABLE;
        for (int b = 0; b < band; ++b) {
            int j = i + shift + b;
            int value = UNREACHABLE;
            if (0 <= j && j <= m) {
                int diag = UNREACHABLE + 1;
                if (j > 0)
                    diag = prev[b] + (code >= 4 || code != text[j - 1] ? 1 : 0);
                int up = prev[b + 1] + 1;
                value = min(min(diag, up), left + 1);
                uint bit = 1u << (b % 32);
                if (diag == value)
                    diag_row[b / 32] |= bit;
                else if (up == value)
                    ins_row[b / 32] |= bit;
                value = min(value, UNREACHABLE);
            }
            cur[b] = value;
            left = value;
        }
        for (int b = 0; b < band; ++b)
            prev[b] = cur[b];
    }

    if (prev[k] > (int)k) {
        starts[t] = UINT_MAX;
        counts[t] = 0u;
        zero_from(row, 0u);
        atomic_inc(untraced);
        return;
    }
    /* Walk back twice: once to count the moves, once to write them first to last. */
    uint count = 0;
    int i = length, b = (int)k;
    while (i > 0) {
        uint bit = 1u << (b % 32);
        int w = (i - 1) * BAND_WORDS + b / 32;
        if (diag_bits[w] & bit) {
            --i;
        } else if (ins_bits[w] & bit) {
            --i;
            ++b;
        } else {
            --b;
        }
        ++count;
    }
    starts[t] = a + (uint)(shift + b);
    counts[t] = count;
    zero_from(row, count);
    uint at = count;
    i = length;
    b = (int)k;
    while (i > 0) {
        uint bit = 1u << (b % 32);
        int w = (i - 1) * BAND_WORDS + b / 32;
        uchar op;
        if (diag_bits[w] & bit) {
            uchar code = read[i - 1];
            op = code >= 4 || code != text[i + shift + b - 1] ? OP_MISMATCH : OP_MATCH;
            --i;
        } else if (ins_bits[w] & bit) {
            op = OP_INS;
            --i;
            ++b;
        } else {
            op = OP_DEL;
            --b;
        }
        row[--at] = op;
    }
#endif
}
