/* End distances of whole reads against candidate genome windows, one work-item per candidate
 * (see marose/align.py for the definition): D[j] is the least edit distance between the read
 * and a substring of the window ending at j, written as a byte, 255 above k or past the window.
 *
 * Myers' bit-vector algorithm on 64-bit words; a read of L bases takes (L + 63) / 64 words,
 * chained in blocks (Hyyro's carries of the horizontal deltas between words). The top row is
 * 0 everywhere (free start in the window), so the first word gets no carry. A base code above
 * 3 (N) matches nothing: its match mask is empty, in the read and in the genome.
 *
 * Windows are at most 2^24 bases (an end's column is kept in 24 bits).
 * Needs -D MAX_WORDS=: reads up to 64 * MAX_WORDS bases. */

#define WORD_BITS 64u
#define NO_HIT 255

/* Scans candidate c's window; each end j with D <= k goes to row[j] (dense, 255 elsewhere) when
 * row is given, else is appended to hits as the pair (c, j << 8 | D) (hits past capacity are
 * counted only). */
inline void scan_window(uint c, __global const uchar *read_codes, __global const uint *read_offset,
                        __global const uint *read_length, __global const uchar *genome,
                        __global const uint *cand_read, __global const uint *cand_start,
                        __global const uint *cand_len, uint width, uint k, __global uchar *row,
                        __global uint *hits, volatile __global uint *n_hits, uint capacity)
{
    uint r = cand_read[c];
    uint length = read_length[r];
    uint words = (length + WORD_BITS - 1u) / WORD_BITS;
    __global const uchar *read = read_codes + read_offset[r];
    __global const uchar *text = genome + cand_start[c];
    uint size = min(cand_len[c], width);

    ulong peq[MAX_WORDS * 4], pv[MAX_WORDS], mv[MAX_WORDS];
    for (uint w = 0; w < words; ++w) {
        pv[w] = ~0UL;
        mv[w] = 0UL;
        for (uint b = 0; b < 4u; ++b)
            peq[w * 4u + b] = 0UL;
    }
    for (uint i = 0; i < length; ++i) {
        uchar code = read[i];
        if (code < 4)
            peq[(i / WORD_BITS) * 4u + code] |= 1UL << (i % WORD_BITS);
    }

    uint last = (length - 1u) % WORD_BITS;
    int score = (int)length;
    for (uint j = 0; j < size; ++j) {
        uchar base = text[j];
        ulong hp = 0UL, hm = 0UL;  /* horizontal +1 / -1 entering the current word */
        for (uint w = 0; w < words; ++w) {
            ulong p = pv[w], m = mv[w];
            ulong eq = base < 4 ? peq[w * 4u + base] : 0UL;
            ulong xv = eq | m;
            eq |= hm;
            ulong xh = (((eq & p) + p) ^ p) | eq;
            ulong ph = m | ~(xh | p);
            ulong mh = p & xh;
            uint bottom = w + 1u < words ? WORD_BITS - 1u : last;
            ulong out_p = (ph >> bottom) & 1UL, out_m = (mh >> bottom) & 1UL;
            ph = (ph << 1) | hp;
            mh = (mh << 1) | hm;
            hp = out_p;
            hm = out_m;
            pv[w] = mh | ~(xv | ph);
            mv[w] = ph & xv;
        }
        score += (int)hp - (int)hm;
        if (row)
            row[j] = score <= (int)k ? (uchar)score : (uchar)NO_HIT;
        else if (score <= (int)k) {
            uint at = atomic_inc(n_hits);
            if (at < capacity) {
                hits[2 * at] = c;
                hits[2 * at + 1] = (j << 8) | (uint)score;
            }
        }
    }
    if (row)
        for (uint j = size; j < width; ++j)
            row[j] = NO_HIT;
}

__kernel void end_distances(__global const uchar *read_codes, __global const uint *read_offset,
                            __global const uint *read_length, __global const uchar *genome,
                            __global const uint *cand_read, __global const uint *cand_start,
                            __global const uint *cand_len, uint n, uint width, uint k,
                            __global uchar *out)
{
    uint c = get_global_id(0);
    if (c < n)
        scan_window(c, read_codes, read_offset, read_length, genome, cand_read, cand_start, cand_len,
                    width, k, out + (size_t)c * width, 0, 0, 0u);
}

/* The ends within k edits of every window, as a list: count them all, keep the first capacity. */
__kernel void end_hits(__global const uchar *read_codes, __global const uint *read_offset,
                       __global const uint *read_length, __global const uchar *genome,
                       __global const uint *cand_read, __global const uint *cand_start,
                       __global const uint *cand_len, uint n, uint width, uint k,
                       __global uint *hits, volatile __global uint *n_hits, uint capacity)
{
    uint c = get_global_id(0);
    if (c < n)
        scan_window(c, read_codes, read_offset, read_length, genome, cand_read, cand_start, cand_len,
                    width, k, 0, hits, n_hits, capacity);
}
