/* End distances of whole reads against candidate genome windows, one work-item per candidate
 * (see marose/align.py for the definition): D[j] is the least edit distance between the read
 * and a substring of the window ending at j, written as a byte, 255 above k or past the window.
 *
 * Myers' bit-vector algorithm on 64-bit words; a read of L bases takes (L + 63) / 64 words,
 * chained in blocks (Hyyro's carries of the horizontal deltas between words). The top row is
 * 0 everywhere (free start in the window), so the first word gets no carry. A base code above
 * 3 (N) matches nothing: its match mask is empty, in the read and in the genome.
 *
 * Needs search.cl and -D MAX_WORDS=: reads up to 64 * MAX_WORDS bases. */

#define WORD_BITS 64u
#define NO_HIT 255

/* Myers' scan of a whole read against text[0, size): each end j with D <= k goes to row[j]
 * (dense, 255 elsewhere) when row is given, else is appended to hits as the three words
 * (tag, base + j, D); hits past capacity are counted only. */
inline void scan(__global const uchar *read, uint length, __global const uchar *text, uint size,
                 uint width, uint k, __global uchar *row, uint tag, uint base, __global uint *hits,
                 volatile __global uint *n_hits, uint capacity)
{
    uint words = (length + WORD_BITS - 1u) / WORD_BITS;
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
        uchar base_code = text[j];
        ulong hp = 0UL, hm = 0UL;  /* horizontal +1 / -1 entering the current word */
        for (uint w = 0; w < words; ++w) {
            ulong p = pv[w], m = mv[w];
            ulong eq = base_code < 4 ? peq[w * 4u + base_code] : 0UL;
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
                hits[3 * at] = tag;
                hits[3 * at + 1] = base + j;
                hits[3 * at + 2] = (uint)score;
            }
        }
    }
    if (row)
        for (uint j = size; j < width; ++j)
            row[j] = NO_HIT;
}

/* One window per candidate, given by the host. */
__kernel void end_distances(__global const uchar *read_codes, __global const uint *read_offset,
                            __global const uint *read_length, __global const uchar *genome,
                            __global const uint *cand_read, __global const uint *cand_start,
                            __global const uint *cand_len, uint n, uint width, uint k,
                            __global uchar *out)
{
    uint c = get_global_id(0);
    if (c < n) {
        uint r = cand_read[c];
        scan(read_codes + read_offset[r], read_length[r], genome + cand_start[c], min(cand_len[c], width),
             width, k, out + (size_t)c * width, 0u, 0u, 0, 0, 0u);
    }
}

/* The filter's candidates straight from the device (see marose/filter.py, Filter.emit): entry i
 * of the buffer belongs to the row whose [offset, offset + count) holds it; its window is
 * [start - k, start + L + k) cut to the contig of start. Hits are (row, genome end, D). */
__kernel void row_hits(__global const uchar *read_codes, __global const uint *read_offset,
                       __global const uint *read_length, __global const uchar *genome,
                       __global const uint *starts, __global const uint *row_offset,
                       __global const uint *row_count, uint n_rows, uint n_entries,
                       __global const uint *contig_start, uint n_contigs, uint k,
                       __global uint *hits, volatile __global uint *n_hits, uint capacity)
{
    uint i = get_global_id(0);
    if (i >= n_entries)
        return;
    uint r = last_at_most(row_offset, n_rows, i);
    if (r >= n_rows || i - row_offset[r] >= (row_count[r] & 0x7fffffffu))
        return;
    uint start = starts[i], length = read_length[r];
    uint c = last_at_most(contig_start, n_contigs, start);
    uint first = start - contig_start[c] >= k ? start - k : contig_start[c];
    uint end = min(contig_start[c + 1], start + length + k);
    scan(read_codes + read_offset[r], length, genome + first, end - first, 0u, k, 0, r, first, hits,
         n_hits, capacity);
}
