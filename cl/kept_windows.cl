/* The windows that the filter over candidates kept, aligned apart from row_loci (see
 * marose/kept_windows.py): the filter lists them, task by task (cl/prefilter.cl,
 * WINDOW_LIST_ARGS), and align_kept_windows aligns each, a work-item each, and keeps what
 * row_loci needs of it (replay_window in cl/extend.cl). On a GPU a work-item of row_loci
 * that aligns a window holds up the other work-items of its warp, most of which only test
 * windows or skip them; here every work-item of a warp aligns.
 *
 * The tasks are row_loci's and the filter's (PREFILTER_ARGS). Needs search.cl, extend.cl and
 * prefilter.cl. Defines beyond theirs: WINDOW_ENDS. */

/* Listed window g (of n_windows; NOT_LISTED: a place left empty): its chain's window [w, e),
 * as row_loci merges it, aligned with the whole read; window_found[2 g, + 2) = (ends within k
 * before column b, b), where b is the first column whose score can no longer fall to k by the
 * window's end (e when none is), and the first WINDOW_ENDS of those ends, less w, at
 * window_end[WINDOW_ENDS g], their distances at window_dist. */
__kernel void align_kept_windows(PREFILTER_ARGS, uint n_windows, __global const uint *window_at,
                                 __global uint *window_found, __global ushort *window_end,
                                 __global uchar *window_dist)
{
    uint g = get_global_id(0);
    if (g >= n_windows)
        return;
    uint r = window_at[2u * g];
    if (r == NOT_LISTED)
        return;
    uint length = read_length[r], first = window_at[2u * g + 1u], w = 0, e = 0;
    chain_window(starts + row_begin[r], first, row_size[r], length, k, contig_start, n_contigs, &w, &e);
    uint words = (length + WORD_BITS - 1u) / WORD_BITS, bottom = (length - 1u) % WORD_BITS;
    ulong peq[MAX_WORDS * 4], pv[MAX_WORDS], mv[MAX_WORDS];
    read_masks(read_codes + read_offset[r], length, peq);
    reset_column(words, pv, mv);
    int score = (int)length;
    uint found = 0, b = e;
    for (uint c = w; c < e; ++c) {
        score += next_column(peq, pv, mv, words, bottom, genome[c]);
        if (score > (int)(k + e - 1u - c)) {
            b = c;
            break;
        }
        if (score <= (int)k) {
            if (found < WINDOW_ENDS) {
                window_end[WINDOW_ENDS * g + found] = (ushort)(c - w);
                window_dist[WINDOW_ENDS * g + found] = (uchar)score;
            }
            found = c - w <= USHRT_MAX ? found + 1u : WINDOW_ENDS + 1u;  /* an end past a ushort: row_loci aligns */
        }
    }
    window_found[2u * g] = found;
    window_found[2u * g + 1u] = b;
}
