/* The pre-alignment filter over the candidates, before row_loci (see marose/prefilter.py and its
 * twin, prealign.kept): a row's candidates fall into chains, as row_loci merges them (each less
 * than k + 2 after the one before, in one contig), and a chain is kept unless its window
 * [w, e) = [first - k, last + L + k), cut to its contig, surely holds no end within k: the read's
 * first 64 bases, starting in the window's first e + k - L - w + 1 columns (where an alignment of
 * the whole read within k starts), end nowhere within k early enough to leave room for the rest
 * (prefix_rejects of cl/extend.cl, prealign.rejects); then, for the chains left, the read's last
 * 64 bases backwards from the window's end. prefilter marks each candidate kept or not, and
 * prefilter_backwards marks again the candidates of the chains kept, counting those it keeps;
 * row_loci then skips the candidates left unmarked, where they lie.
 *
 * A task is `slice` candidates of one row, as row_loci's; it tests the chains that start in it,
 * LANES windows at a time (the same read in every lane): one word of Myers a column for all of
 * them, until none of them can still end within k. The loops over the lanes are unrolled, so that
 * their arrays become registers that the compiler may join into vector instructions (a sixth off
 * the kernel's time under PyPI's PoCL 3.0; PoCL 5.0 still runs the lanes one after another).
 *
 * Needs search.cl and extend.cl (WORD_BITS). Defines: LANES. */

/* Match masks of a read's first word, base b at peq[b]; backwards (1), of its last 64 bases read
 * from its end. */
inline void first_word_masks(__global const uchar *read, uint length, uint backwards, ulong *peq)
{
    for (uint b = 0; b < 4u; ++b)
        peq[b] = 0UL;
    for (uint i = 0; i < min(length, WORD_BITS); ++i) {
        uchar code = read[backwards ? length - 1u - i : i];
        if (code < 4)
            peq[code] |= 1UL << i;
    }
}

/* The chain that starts at candidate i (of n, in run): its window [w, e) and its last candidate. */
inline uint chain_window(__global const uint *run, uint i, uint n, uint length, uint k,
                         __global const uint *contig_start, uint n_contigs, uint *w, uint *e)
{
    uint c = last_at_most(contig_start, n_contigs, run[i]), last = i;
    while (last + 1u < n && run[last + 1u] - run[last] <= k + 1u && run[last + 1u] < contig_start[c + 1u])
        ++last;
    *w = run[i] - contig_start[c] >= k ? run[i] - k : contig_start[c];
    *e = min(contig_start[c + 1u], run[last] + length + k);
    return last;
}

/* Asks for the first two cache lines each pass reads of the windows of candidates [from, to), of
 * those marked when backwards, so that a CPU tests its lanes while the next ones' bytes arrive:
 * the windows lie far apart in the genome, and each first read of one otherwise waits on memory. */
inline void prefetch_windows(__global const uchar *genome, __global const uint *run, uint from, uint to,
                             uint length, uint k, __global const uchar *mark, uint backwards)
{
    for (uint j = from; j < to; ++j) {
        if (backwards && !mark[j])
            continue;
        __global const uchar *edge = backwards ? genome + run[j] + length + k - 1u
                                               : genome + (run[j] >= k ? run[j] - k : 0u);
        PREFETCH_LINE(edge);
        PREFETCH_LINE(backwards ? edge - min((uint)(edge - genome), 64u) : edge + 64);
    }
}

/* Whether candidate i (> 0) continues the chain of the one before it. */
inline bool continues_chain(__global const uint *run, uint i, uint k, __global const uint *contig_start,
                            uint n_contigs)
{
    uint c = last_at_most(contig_start, n_contigs, run[i - 1u]);
    return run[i] - run[i - 1u] <= k + 1u && run[i] < contig_start[c + 1u];
}

/* Task t takes row r's candidates [first, first + slice) (r and first as in row_loci) and sets
 * keep[i] of the candidates of each chain that starts there: 1 when the chain is kept, else 0;
 * backwards, only of the chains whose candidates keep marks, adding those kept to n_kept. Reads
 * of at most one word keep every candidate, as prefix_rejects does. */
#define PREFILTER_ARGS                                                                                    \
    __global const uchar *read_codes, __global const uint *read_offset, __global const uint *read_length,  \
        __global const uchar *genome, __global const uint *starts, __global const uint *row_begin,         \
        __global const uint *row_size, __global const uint *task_base, uint n_rows, uint slice,            \
        __global const uint *contig_start, uint n_contigs, uint k, __global uchar *keep, __global uint *n_kept

/* With list_windows, the two tests also list the chains kept, for cl/kept_windows.cl: the first
 * counts task t's in window_count[t] and adds them to counters[0]; the second takes as many
 * places in window_at from counters[1] (window_base[t]), writes there (row, first candidate) of
 * each chain it keeps, in order, then NOT_LISTED in the places left, and its count in
 * window_count[t]. */
#define WINDOW_LIST_ARGS                                                                             \
    uint list_windows, __global uint *window_count, __global uint *window_base, __global uint *counters, \
        __global uint *window_at

/* Listed window j: a row's candidate i starts it (scalar stores: Oclgrind takes a uint2 built of
 * variables for an uninitialized value). */
inline void list_window(__global uint *window_at, uint j, uint r, uint i)
{
    window_at[2u * j] = r;
    window_at[2u * j + 1u] = i;
}

/* The end of task t's listing: the places it took and did not fill marked NOT_LISTED. */
inline void end_listing(uint t, uint backwards, uint base, uint taken, uint chains, WINDOW_LIST_ARGS)
{
    if (!list_windows)
        return;
    if (!backwards) {
        window_count[t] = chains;
        if (chains)
            atomic_add(counters, chains);
        return;
    }
    for (uint j = chains; j < taken; ++j)
        list_window(window_at, base + j, NOT_LISTED, NOT_LISTED);
    window_count[t] = chains;
    window_base[t] = base;
}

inline void mark_kept(PREFILTER_ARGS, const uint backwards, WINDOW_LIST_ARGS)
{
    uint t = get_global_id(0);
    if (t >= task_base[n_rows])
        return;
    uint r = last_at_most(task_base, n_rows, t), first = (t - task_base[r]) * slice;
    __global const uint *run = starts + row_begin[r];
    __global uchar *mark = keep + row_begin[r];
    uint n = row_size[r], last = min(n, first + slice), length = read_length[r];
    uint taken = backwards && list_windows ? window_count[t] : 0u;
    uint base = taken ? atomic_add(counters + 1, taken) : 0u, chains = 0;
    bool listing = backwards && list_windows;
    if (length <= WORD_BITS) {
        for (uint i = first; i < last; ++i) {
            mark[i] = 1;
            if (list_windows && (i == 0u || !continues_chain(run, i, k, contig_start, n_contigs))) {
                if (listing)
                    list_window(window_at, base + chains, r, i);
                ++chains;
            }
        }
        if (backwards && last > first)
            atomic_add(n_kept, last - first);
        end_listing(t, backwards, base, taken, chains, list_windows, window_count, window_base, counters, window_at);
        return;
    }
    ulong peq[4];
    first_word_masks(read_codes + read_offset[r], length, backwards, peq);
    uint cut = length - min(length, WORD_BITS + k);
    uint i = first, kept = 0;
    if (i > 0u)  /* the task before tests the chain running into this one */
        while (i < last && continues_chain(run, i, k, contig_start, n_contigs))
            ++i;
    while (backwards && i < last && !mark[i])  /* a chain the first pass dropped: all its marks are 0 */
        ++i;
    while (i < last) {
        /* LANES chains at once, the lanes in arrays and each step a loop over them, which the
           compiler may turn into vector instructions of the device's width */
        uint chain[LANES], chain_end[LANES];  /* a lane's first and last candidate */
        uint begin[LANES], last_column[LANES];  /* a lane reads its last column again when done */
        int columns[LANES], starts_before[LANES], score[LANES], best[LANES], most = 0;
        ulong pv[LANES], mv[LANES];
        #pragma unroll
        for (uint l = 0; l < LANES; ++l) {
            uint w = 0, e = 0;
            chain[l] = i;
            chain_end[l] = i < last ? chain_window(run, i, n, length, k, contig_start, n_contigs, &w, &e) : i - 1u;
            /* an alignment within k starts in the window's first e + k - length - w + 1 columns */
            starts_before[l] = (int)(e + k) - (int)(length + w) + 1;
            /* in int: an unsigned difference clamped at 0 compiles to llvm.usub.sat, which Oclgrind lacks */
            int span = (int)(e - w) - (int)cut;
            columns[l] = i < last && starts_before[l] > 0 ? max(span, 0) : 0;
            /* backwards, the lane reads its window from its end: base e - 1 - c at column c */
            begin[l] = backwards ? max(e, 1u) - 1u : w;
            last_column[l] = (uint)max(columns[l], 1) - 1u;
            PREFETCH_LINE(genome + w);
            PREFETCH_LINE(genome + max(e, 1u) - 1u);
            most = max(most, columns[l]);
            pv[l] = ~0UL;
            mv[l] = 0UL;
            score[l] = best[l] = (int)WORD_BITS;
            i = max(i, chain_end[l] + 1u);
            while (backwards && i < last && !mark[i])
                ++i;
        }
        /* the windows of the next two rounds of lanes */
        prefetch_windows(genome, run, i, min(last, i + 2u * LANES), length, k, mark, backwards);
        for (int c = 0; c < most; ++c) {
            #pragma unroll
            for (uint l = 0; l < LANES; ++l) {
                uint step = min((uint)c, last_column[l]);
                uchar b = genome[backwards ? begin[l] - step : begin[l] + step];
                ulong eq = (b == 0 ? peq[0] : 0UL) | (b == 1 ? peq[1] : 0UL) | (b == 2 ? peq[2] : 0UL)
                           | (b == 3 ? peq[3] : 0UL);
                ulong xv = eq | mv[l];
                ulong xh = (((eq & pv[l]) + pv[l]) ^ pv[l]) | eq;
                ulong ph = mv[l] | ~(xh | pv[l]);
                ulong mh = pv[l] & xh;
                score[l] += (int)(ph >> 63) - (int)(mh >> 63);
                ph = (ph << 1) | (ulong)(c + 1 >= starts_before[l]);  /* no start after it: the top row rises */
                mh <<= 1;
                pv[l] = mh | ~(xv | ph);
                mv[l] = ph & xv;
                best[l] = c < columns[l] ? min(best[l], score[l]) : best[l];
            }
            if ((c & 7) == 7) {
                /* a lane is open while it has not met k and can still: its score falls by at most
                   1 a column, and once no alignment starts any more, every end to come is reached
                   through this column, at a row i no less than 64 - (columns left), so at no less
                   than the least D[i] there: the score less the rises below row i */
                int open = 0;
                #pragma unroll
                for (uint l = 0; l < LANES; ++l) {
                    int left = columns[l] - 1 - c;
                    ulong band = left <= 0 ? 0UL : left >= (int)WORD_BITS ? ~0UL : ~0UL << (WORD_BITS - (uint)left);
                    bool reachable = c + 2 <= starts_before[l] || score[l] - (int)popcount(pv[l] & band) <= (int)k;
                    open |= (left >= 0) & (best[l] > (int)k) & (score[l] <= (int)k + left) & reachable;
                }
                if (!open)
                    break;
            }
        }
        #pragma unroll
        for (uint l = 0; l < LANES; ++l) {
            uchar kept_here = columns[l] > 0 && best[l] <= (int)k;
            for (uint j = chain[l]; j <= chain_end[l] && j + 1u > chain[l]; ++j)
                mark[j] = kept_here;
            kept += kept_here ? chain_end[l] + 1u - chain[l] : 0u;  /* kept: a chain of its own */
            if (kept_here && listing)
                list_window(window_at, base + chains, r, chain[l]);
            chains += kept_here ? 1u : 0u;
        }
    }
    if (backwards && kept)
        atomic_add(n_kept, kept);
    end_listing(t, backwards, base, taken, chains, list_windows, window_count, window_base, counters, window_at);
}

__kernel void prefilter(PREFILTER_ARGS, WINDOW_LIST_ARGS)
{
    mark_kept(read_codes, read_offset, read_length, genome, starts, row_begin, row_size, task_base, n_rows, slice,
              contig_start, n_contigs, k, keep, n_kept, 0u, list_windows, window_count, window_base, counters,
              window_at);
}

/* prefilter with the read's last 64 bases, backwards from the window's end, over the chains
 * prefilter kept. */
__kernel void prefilter_backwards(PREFILTER_ARGS, WINDOW_LIST_ARGS)
{
    mark_kept(read_codes, read_offset, read_length, genome, starts, row_begin, row_size, task_base, n_rows, slice,
              contig_start, n_contigs, k, keep, n_kept, 1u, list_windows, window_count, window_base, counters,
              window_at);
}
