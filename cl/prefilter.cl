/* The pre-alignment filter over each candidate's own window, before row_loci (see
 * marose/prefilter.py): a candidate is kept unless prefix_rejects (cl/extend.cl) rejects its window
 * [p - k, p + L + k), cut to p's contig. A work-item per task of `slice` candidates of one row,
 * LANES windows at a time (the same read in every lane): one word of Myers a column for all of
 * them, until none of them can still end within k.
 *
 * Needs search.cl and extend.cl (WORD_BITS). Defines: LANES. */

/* Match masks of a read's first word: base b at peq[b]. */
inline void first_word_masks(__global const uchar *read, uint length, ulong *peq)
{
    for (uint b = 0; b < 4u; ++b)
        peq[b] = 0UL;
    for (uint i = 0; i < min(length, WORD_BITS); ++i) {
        uchar code = read[i];
        if (code < 4)
            peq[code] |= 1UL << i;
    }
}

/* Task t takes row r's candidates [first, first + slice) (r and first as in row_loci) and writes
 * those it keeps, in order, to kept from row_begin[r] + first, and their number to kept_count[t].
 * Reads of at most one word keep every candidate, as prefix_rejects does. */
__kernel void prefilter(__global const uchar *read_codes, __global const uint *read_offset,
                        __global const uint *read_length, __global const uchar *genome,
                        __global const uint *starts, __global const uint *row_begin,
                        __global const uint *row_size, __global const uint *task_base, uint n_rows,
                        uint slice, __global const uint *contig_start, uint n_contigs, uint k,
                        __global uint *kept, __global uint *kept_count)
{
    uint t = get_global_id(0);
    if (t >= task_base[n_rows])
        return;
    uint r = last_at_most(task_base, n_rows, t), first = (t - task_base[r]) * slice;
    __global const uint *run = starts + row_begin[r];
    __global uint *out = kept + row_begin[r] + first;
    uint last = min(row_size[r], first + slice), length = read_length[r], n = 0;
    if (length <= WORD_BITS) {
        for (uint i = first; i < last; ++i)
            out[n++] = run[i];
        kept_count[t] = n;
        return;
    }
    ulong peq[4];
    first_word_masks(read_codes + read_offset[r], length, peq);
    uint cut = length - min(length, WORD_BITS + k);
    for (uint i = first; i < last; i += LANES) {
        /* LANES windows at once, the lanes in arrays and each step a loop over them, which the
           compiler may turn into vector instructions of the device's width */
        uint begin[LANES], end[LANES];  /* a lane reads bases [begin, end] (its last again when done) */
        int columns[LANES], score[LANES], best[LANES], most = 0;
        ulong pv[LANES], mv[LANES];
        for (uint l = 0; l < LANES; ++l) {
            uint start = run[min(i + l, last - 1u)];
            uint c = last_at_most(contig_start, n_contigs, start);
            uint w = start - contig_start[c] >= k ? start - k : contig_start[c];
            uint e = min(contig_start[c + 1u], start + length + k);
            columns[l] = e - w > cut ? (int)(e - w - cut) : 0;
            begin[l] = w;
            end[l] = w + (uint)max(columns[l], 1) - 1u;
            most = max(most, columns[l]);
            pv[l] = ~0UL;
            mv[l] = 0UL;
            score[l] = best[l] = (int)WORD_BITS;
        }
        for (int c = 0; c < most; ++c) {
            for (uint l = 0; l < LANES; ++l) {
                uchar b = genome[min(begin[l] + (uint)c, end[l])];
                ulong eq = (b == 0 ? peq[0] : 0UL) | (b == 1 ? peq[1] : 0UL) | (b == 2 ? peq[2] : 0UL)
                           | (b == 3 ? peq[3] : 0UL);
                ulong xv = eq | mv[l];
                ulong xh = (((eq & pv[l]) + pv[l]) ^ pv[l]) | eq;
                ulong ph = mv[l] | ~(xh | pv[l]);
                ulong mh = pv[l] & xh;
                score[l] += (int)(ph >> 63) - (int)(mh >> 63);
                ph <<= 1;
                mh <<= 1;
                pv[l] = mh | ~(xv | ph);
                mv[l] = ph & xv;
                best[l] = c < columns[l] ? min(best[l], score[l]) : best[l];
            }
            /* a lane is open while it has not met k and its score, falling by at most 1 a column,
               can still reach k in its columns left */
            if ((c & 7) == 7) {
                int open = 0;
                for (uint l = 0; l < LANES; ++l)
                    open |= (c < columns[l]) & (best[l] > (int)k) & (score[l] <= (int)k + columns[l] - 1 - c);
                if (!open)
                    break;
            }
        }
        for (uint l = 0; l < LANES && i + l < last; ++l)
            if (columns[l] > 0 && best[l] <= (int)k)
                out[n++] = run[i + l];
    }
    kept_count[t] = n;
}

/* A work-item per task: its kept candidates, kept_count[t] of them from row_begin[r] + first
 * of kept, to out from task_out[t]. */
__kernel void gather_kept(__global const uint *kept, __global const uint *row_begin,
                          __global const uint *task_base, uint n_rows, uint slice,
                          __global const uint *kept_count, __global const uint *task_out, __global uint *out)
{
    uint t = get_global_id(0);
    if (t >= task_base[n_rows])
        return;
    uint r = last_at_most(task_base, n_rows, t), first = (t - task_base[r]) * slice;
    __global const uint *from = kept + row_begin[r] + first;
    __global uint *to = out + task_out[t];
    for (uint j = 0; j < kept_count[t]; ++j)
        to[j] = from[j];
}
