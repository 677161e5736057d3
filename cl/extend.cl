/* End distances of whole reads against candidate genome windows (see marose/align.py for the
 * definition): D[j] is the least edit distance between the read and a substring of the window
 * ending at j. end_distances writes them for windows given by the host, a work-item per window;
 * row_loci turns the windows of the filter's candidates into loci, a work-item per read strand.
 *
 * Myers' bit-vector algorithm on 64-bit words; a read of L bases takes (L + 63) / 64 words,
 * chained in blocks (Hyyro's carries of the horizontal deltas between words). The top row is
 * 0 everywhere (free start in the window), so the first word gets no carry. A base code above
 * 3 (N) matches nothing: its match mask is empty, in the read and in the genome.
 *
 * Needs search.cl and -D MAX_WORDS=: reads up to 64 * MAX_WORDS bases; PREFETCH=1 (on a
 * CPU) lets row_loci ask for a window's genome bytes one window early; MERGE_WINDOWS (0 or 1)
 * turns on row_loci's merging of near windows. */

#define WORD_BITS 64u
#define NO_HIT 255

/* Match masks of a read: word w, base b at peq[4 w + b]. */
inline void read_masks(__global const uchar *read, uint length, ulong *peq)
{
    uint words = (length + WORD_BITS - 1u) / WORD_BITS;
    for (uint i = 0; i < 4u * words; ++i)
        peq[i] = 0UL;
    for (uint i = 0; i < length; ++i) {
        uchar code = read[i];
        if (code < 4)
            peq[(i / WORD_BITS) * 4u + code] |= 1UL << (i % WORD_BITS);
    }
}

/* The vertical deltas of an empty window (free start: the top row is 0). */
inline void reset_column(uint words, ulong *pv, ulong *mv)
{
    for (uint w = 0; w < words; ++w) {
        pv[w] = ~0UL;
        mv[w] = 0UL;
    }
}

/* One genome base through one word: its vertical deltas p, m and the horizontal ones entering it
 * (hp, hm: +1 / -1) are updated to those leaving it at row `bottom`. */
inline void word_step(ulong eq, ulong *p, ulong *m, ulong *hp, ulong *hm, uint bottom)
{
    ulong xv = eq | *m;
    eq |= *hm;
    ulong xh = (((eq & *p) + *p) ^ *p) | eq;
    ulong ph = *m | ~(xh | *p);
    ulong mh = *p & xh;
    ulong out_p = (ph >> bottom) & 1UL, out_m = (mh >> bottom) & 1UL;
    ph = (ph << 1) | *hp;
    mh = (mh << 1) | *hm;
    *hp = out_p;
    *hm = out_m;
    *p = mh | ~(xv | ph);
    *m = ph & xv;
}

/* One genome base through all words; returns the change of the bottom cell, -1, 0 or +1. */
ALWAYS_INLINE int next_column(const ulong *peq, ulong *pv, ulong *mv, uint words, uint last, uchar base_code)
{
    ulong hp = 0UL, hm = 0UL;  /* horizontal +1 / -1 entering the current word */
#pragma unroll  /* the words' state stays in registers */
    for (uint w = 0; w < MAX_WORDS; ++w)
        if (w < words)
            word_step(base_code < 4 ? peq[w * 4u + base_code] : 0UL, pv + w, mv + w, &hp, &hm,
                      w + 1u < words ? WORD_BITS - 1u : last);
    return (int)hp - (int)hm;
}

/* One window per candidate, given by the host: row c of out is D of the read against
 * genome[cand_start[c], + cand_len[c]), 255 above k and past the window. */
__kernel void end_distances(__global const uchar *read_codes, __global const uint *read_offset,
                            __global const uint *read_length, __global const uchar *genome,
                            __global const uint *cand_read, __global const uint *cand_start,
                            __global const uint *cand_len, uint n, uint width, uint k,
                            __global uchar *out)
{
    uint c = get_global_id(0);
    if (c >= n)
        return;
    uint r = cand_read[c], length = read_length[r], size = min(cand_len[c], width);
    uint words = (length + WORD_BITS - 1u) / WORD_BITS, last = (length - 1u) % WORD_BITS;
    ulong peq[MAX_WORDS * 4], pv[MAX_WORDS], mv[MAX_WORDS];
    read_masks(read_codes + read_offset[r], length, peq);
    reset_column(words, pv, mv);
    __global const uchar *text = genome + cand_start[c];
    __global uchar *row = out + (size_t)c * width;
    int score = (int)length;
    for (uint j = 0; j < size; ++j) {
        score += next_column(peq, pv, mv, words, last, text[j]);
        row[j] = score <= (int)k ? (uchar)score : (uchar)NO_HIT;
    }
    for (uint j = size; j < width; ++j)
        row[j] = NO_HIT;
}

/* The pre-alignment filter (see marose/prealign.py): whether a read of more than one word surely
 * has no end within k in the window [w, e), because its first word (read bases 0..63, match
 * masks peq[0..3]), starting in the window's first e + k - L - w + 1 columns (where an alignment
 * of the whole read within k starts), has none in [w, e - cut), cut = L - 64 - k: the rest of the
 * read takes at least cut more window bases. One word of Myers a column, where the read takes
 * several. */
inline bool prefix_rejects(const ulong *peq, uint length, __global const uchar *genome, uint w, uint e, uint k)
{
    if (length <= WORD_BITS)
        return false;
    uint cut = length - min(length, WORD_BITS + k);  /* (a conditional becomes llvm.usub.sat, which Oclgrind lacks) */
    int starts = (int)(e + k) - (int)(length + w) + 1;  /* the columns an alignment may start in */
    if (e - w <= cut || starts <= 0)
        return true;
    uint end = e - cut;
    ulong pv = ~0UL, mv = 0UL;
    int score = (int)WORD_BITS;
    for (uint c = w; c < end; ++c) {
        int column = (int)(c - w);
        ulong hp = (ulong)(column + 1 >= starts), hm = 0UL;  /* no start after it: the top row rises */
        uchar code = genome[c];
        word_step(code < 4 ? peq[code] : 0UL, &pv, &mv, &hp, &hm, WORD_BITS - 1u);
        score += (int)hp - (int)hm;
        if (score <= (int)k)
            return false;
        int left = (int)(end - 1u - c);
        if (score > (int)k + left)
            return true;  /* the score falls by at most 1 a column */
        /* once no alignment starts any more, every end to come is reached through this column, at
           a row i no less than 64 - left, so at no less than the least D[i] there: the score less
           the rises below row i */
        ulong band = left <= 0 ? 0UL : left >= (int)WORD_BITS ? ~0UL : ~0UL << (WORD_BITS - (uint)left);
        if ((column & 7) == 7 && column + 2 > starts && score - (int)popcount(pv & band) > (int)k)
            return true;
    }
    return true;
}

/* out[c] = 1 where prefix_rejects the read cand_read[c] in genome[window_begin[c], window_end[c]). */
__kernel void prefix_rejects_windows(__global const uchar *read_codes, __global const uint *read_offset,
                                     __global const uint *read_length, __global const uchar *genome,
                                     __global const uint *cand_read, __global const uint *window_begin,
                                     __global const uint *window_end, uint n, uint k, __global uchar *out)
{
    uint c = get_global_id(0);
    if (c >= n)
        return;
    uint r = cand_read[c], length = read_length[r];
    ulong peq[MAX_WORDS * 4];
    read_masks(read_codes + read_offset[r], length, peq);
    out[c] = prefix_rejects(peq, length, genome, window_begin[c], window_end[c], k) ? 1 : 0;
}

typedef struct {
    uint open, last, best_end, best_d, contig, owner;
} locus_t;

/* Ends the open locus, writing it when the slice [first, last) owns it (counted past capacity). */
inline void close_locus(locus_t *locus, uint first, uint last, uint *n, uint capacity,
                        __global uint *loci_end, __global uchar *loci_dist)
{
    if (locus->open && locus->owner >= first && locus->owner < last) {
        if (*n < capacity) {
            loci_end[*n] = locus->best_end;
            loci_dist[*n] = (uchar)locus->best_d;
        }
        *n += 1u;
    }
    locus->open = 0u;
}

/* The loci of each read strand (row) in the windows of its candidates: a candidate starting at
 * p is the window [p - k, p + L + k) cut to p's contig. Row r's candidates are the sorted,
 * unique starts[row_begin[r], + row_size[r]). Every end is taken from the first window that
 * holds it, which starts earliest and so has the least distance there. Ends within k at
 * consecutive positions of a contig form a locus, reported at its rightmost end of least
 * distance.
 *
 * Candidates of a contig less than k + 2 apart are one wider window, aligned once (with
 * MERGE_WINDOWS): an end of a later window that an earlier one does not hold is past the
 * earlier window's end, so an alignment to it starting before the later window spans more than
 * L + k bases, more than k edits, and its distance within k is the same. A window (merged or
 * not) that prefix_rejects holds no end within k and is not aligned (with prealign): a later
 * window gives those ends no less, so the loci are the same. With kept_only, the candidates
 * whose keep mark is 0 are skipped: the filter over candidates (cl/prefilter.cl) drops whole
 * chains, whose windows hold no end within k.
 *
 * A work-item per task: row r's candidates are cut into slices of `slice`, its tasks
 * [task_base[r], task_base[r + 1]). Task t takes the candidates [first, first + slice) of its
 * row and writes the loci whose first end one of them holds, in order, to loci_end/loci_dist
 * from src[t] (which it writes), with room for `room`; their number goes to loci_count[t] even
 * when it is larger, and then the task is added to the over_task list (with its count in
 * over_found), to run again. A run again (n_listed > 0) takes the listed tasks, the g-th with
 * room [listed_offset[g], listed_offset[g + 1]) of its own buffers, and marks src[t] with RERUN.
 * A task starts a few windows early, at the first candidate whose window can hold an end next
 * to one of the slice's, and goes on past the slice until its last locus ends. The first run
 * adds the windows it aligned to n_aligned[0].
 *
 * With aligned_apart, a kept window that cl/kept_windows.cl listed and aligned (the chain
 * starting at the window's first candidate, in the list of the task whose slice holds it) is not
 * aligned again: replay_window does with what that alignment kept what aligning it here does. */
#define RERUN 0x80000000u
#define NOT_LISTED 0xFFFFFFFFu

/* The place in the list of kept windows (cl/kept_windows.cl) of the chain that starts at a row's
 * candidate i, a task's chains listed [window_base[u], + window_count[u]) in order; NOT_LISTED
 * when it is not there (a window that starts inside a chain). */
inline uint listed_window(uint u, uint i, __global const uint *window_base, __global const uint *window_count,
                          __global const uint *window_at)
{
    uint lo = window_base[u], hi = lo + window_count[u];
    while (lo < hi) {
        uint mid = (lo + hi) / 2u;
        if (window_at[2u * mid + 1u] < i)
            lo = mid + 1u;
        else
            hi = mid;
    }
    return lo < window_base[u] + window_count[u] && window_at[2u * lo + 1u] == i ? lo : NOT_LISTED;
}

/* The end of candidate i's window (cut to the end of its contig, contig_end). */
inline uint window_end(__global const uint *run, uint i, uint length, uint k, uint contig_end)
{
    return min(contig_end, run[i] + length + k);
}

/* Asks a CPU for the bytes of the next window to align, from candidate i on (the next one kept
 * where kept is given, looking up to 64 candidates ahead), while it aligns this one. */
inline void prefetch_next_window(__global const uchar *genome, __global const uint *run, __global const uchar *kept,
                                 uint i, uint n_candidates, uint length, uint k)
{
#if defined(PREFETCH) && PREFETCH
    for (uint last = min(n_candidates, i + 64u); kept && i < last && !kept[i];)
        ++i;
    if (i < n_candidates) {
        PREFETCH_LINE(genome + max(run[i], k) - k);
        PREFETCH_LINE(genome + run[i] + length);
    }
#endif
}

/* An end e within k (score) of the window whose last candidate is merged, on contig c: it
 * extends the open locus when next to it, else closes that locus and opens one, owned by the
 * first window (from *owner on) that holds e. */
inline void take_end(locus_t *locus, uint *owner, uint e, uint score, uint c, uint merged, __global const uint *run,
                     uint length, uint k, uint contig_end, uint first, uint last, uint *n, uint capacity,
                     __global uint *ends, __global uchar *dists)
{
    if (locus->open && e == locus->last + 1u && c == locus->contig) {
        locus->last = e;
        if (score <= locus->best_d) {
            locus->best_d = score;
            locus->best_end = e;
        }
        return;
    }
    close_locus(locus, first, last, n, capacity, ends, dists);
    while (*owner < merged && e >= window_end(run, *owner, length, k, contig_end))
        ++*owner;
    locus->open = 1u;
    locus->last = locus->best_end = e;
    locus->best_d = score;
    locus->contig = c;
    locus->owner = *owner;
}

/* What aligning the window [window, end) in row_loci does to the loci, from the n ends within k
 * (end_at, less window, and dist_at) that the window's alignment found before column b, where
 * the score can no longer fall to k (end when it never does; cl/kept_windows.cl). Columns before
 * covered are taken from windows before; from covered on, a column not listed is above k and
 * ends the open locus. */
inline void replay_window(locus_t *locus, uint *owner, uint window, uint end, uint b, uint covered, uint c,
                          uint merged, __global const uint *run, uint length, uint k, uint contig_end,
                          __global const ushort *end_at, __global const uchar *dist_at, uint n_ends, uint first,
                          uint last, uint *n, uint capacity, __global uint *ends, __global uchar *dists)
{
    uint next = max(window, covered);  /* the first column not yet seen from covered on */
    for (uint j = 0; j < n_ends; ++j) {
        uint e = window + end_at[j], score = dist_at[j];
        if (e < covered)
            continue;
        next = e + 1u;  /* a column skipped before e closed the locus, as take_end does */
        take_end(locus, owner, e, score, c, merged, run, length, k, contig_end, first, last, n, capacity, ends, dists);
    }
    if (next < b || (b < end && end > covered))
        close_locus(locus, first, last, n, capacity, ends, dists);
}

__kernel void row_loci(__global const uchar *read_codes, __global const uint *read_offset,
                       __global const uint *read_length, __global const uchar *genome,
                       __global const uint *starts, __global const uint *row_begin,
                       __global const uint *row_size, __global const uint *task_base, uint n_rows,
                       uint slice, __global const uint *contig_start, uint n_contigs, uint k,
                       uint room, uint prealign, __global const uchar *keep, uint kept_only,
                       __global const uint *listed, __global const uint *listed_offset,
                       uint n_listed, __global uint *loci_count, __global uint *src,
                       __global uint *loci_end, __global uchar *loci_dist, __global uint *n_over,
                       __global uint *over_task, __global uint *over_found, __global uint *n_aligned,
                       uint aligned_apart, __global const uint *window_base, __global const uint *window_count,
                       __global const uint *window_at, __global const uint *window_found,
                       __global const ushort *window_end_at, __global const uchar *window_dist)
{
    uint g = get_global_id(0);
    if (g >= (n_listed ? n_listed : task_base[n_rows]))
        return;
    uint t = n_listed ? listed[g] : g;
    uint r = last_at_most(task_base, n_rows, t), first = (t - task_base[r]) * slice;
    __global const uint *run = starts + row_begin[r];
    __global const uchar *kept = keep + row_begin[r];
    uint n_candidates = row_size[r], last = min(n_candidates, first + slice);
    uint length = read_length[r];
    uint words = (length + WORD_BITS - 1u) / WORD_BITS, bottom = (length - 1u) % WORD_BITS;
    ulong peq[MAX_WORDS * 4], pv[MAX_WORDS], mv[MAX_WORDS];
    read_masks(read_codes + read_offset[r], length, peq);
    uint base = n_listed ? listed_offset[g] : t * room, n = 0;
    uint capacity = n_listed ? listed_offset[g + 1] - base : room;
    __global uint *ends = loci_end + base;
    __global uchar *dists = loci_dist + base;
    uint reach = length + 2u * k + 1u;
    uint i = run[first] > reach ? lower_bound(run, first, run[first] - reach) : 0u;
    locus_t locus = {0u, 0u, 0u, 0u, 0u, 0u};
    uint covered = 0, aligned = 0;
    for (; i < n_candidates; ++i) {
        if (i >= last && !(locus.open && locus.owner >= first && locus.owner < last))
            break;
        if (kept_only && !kept[i])
            continue;  /* its chain was dropped whole: as if it were not there */
        uint start = run[i];
        uint c = last_at_most(contig_start, n_contigs, start);
        uint window = start - contig_start[c] >= k ? start - k : contig_start[c];
        uint merged = i;  /* the last candidate of the window */
        while (MERGE_WINDOWS && merged + 1u < n_candidates && run[merged + 1u] - run[merged] <= k + 1u
               && run[merged + 1u] < contig_start[c + 1])
            ++merged;
        uint end = window_end(run, merged, length, k, contig_start[c + 1]);
        prefetch_next_window(genome, run, kept_only ? kept : NULL, merged + 1u, n_candidates, length, k);
        if (locus.open && max(window, covered) > locus.last + 1u)
            close_locus(&locus, first, last, &n, capacity, ends, dists);  /* no window holds the next end */
        uint owner = i;  /* the first window holding the end at hand */
        if (prealign && prefix_rejects(peq, length, genome, window, end, k)) {
            covered = max(covered, end);
            i = merged;
            continue;
        }
        ++aligned;
        uint listed = aligned_apart ? listed_window(task_base[r] + i / slice, i, window_base, window_count, window_at)
                                    : NOT_LISTED;
        uint n_ends = listed != NOT_LISTED ? window_found[2u * listed] : WINDOW_ENDS + 1u;
        if (n_ends <= WINDOW_ENDS) {
            replay_window(&locus, &owner, window, end, window_found[2u * listed + 1u], covered, c, merged, run, length,
                          k, contig_start[c + 1], window_end_at + WINDOW_ENDS * listed,
                          window_dist + WINDOW_ENDS * listed, n_ends, first, last, &n, capacity, ends, dists);
            covered = max(covered, end);
            i = merged;
            continue;
        }
        reset_column(words, pv, mv);
        int score = (int)length;
        for (uint e = window; e < end; ++e) {
            score += next_column(peq, pv, mv, words, bottom, genome[e]);
            if (score > (int)(k + end - 1u - e)) {
                /* the score falls by at most 1 a column: no later end of the window is within k */
                if (end > covered)
                    close_locus(&locus, first, last, &n, capacity, ends, dists);
                break;
            }
            if (e < covered)
                continue;
            if (score > (int)k) {
                close_locus(&locus, first, last, &n, capacity, ends, dists);
                continue;
            }
            take_end(&locus, &owner, e, (uint)score, c, merged, run, length, k, contig_start[c + 1], first, last, &n,
                     capacity, ends, dists);
        }
        covered = max(covered, end);
        i = merged;
    }
    close_locus(&locus, first, last, &n, capacity, ends, dists);
    src[t] = n_listed ? RERUN | base : base;
    if (n_listed)
        return;
    loci_count[t] = n;
    atomic_add(n_aligned, aligned);
    if (n > capacity) {
        uint slot = atomic_inc(n_over);
        over_task[slot] = t;
        over_found[slot] = n;
    }
}
