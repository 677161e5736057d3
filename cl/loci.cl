/* The loci of each read, best first and cut to the first max_hits, from the loci row_loci wrote
 * by tasks (cl/extend.cl). A read's loci are its rows' (forward strand, then reverse) in task
 * order, each task's by position; they are ordered by distance, ties kept in that order.
 *
 * Row r's tasks are [task_base[r], task_base[r + 1]), those that found loci first (row_counts
 * puts them there); task t's found[t] loci lie at src[t] in ends/dists, or at src[t] - RERUN in
 * rerun_ends/rerun_dists when row_loci ran again for it. Read r's kept loci go to
 * [out_base[r], out_base[r + 1]).
 *
 * A work-item per read walks its tasks with loci once for each distance, until the kept ones are
 * written: no scratch memory, and most reads have a few loci. A read of many candidates has
 * many tasks (one per SLICE candidates), most of them without loci, which it no longer visits.
 * When every locus is kept (all: pairs keep them for pairing) and k < DIST_BINS, it walks them
 * twice instead: once to count each distance's, once to write each where its distance's start.
 * A read of more than `heavy` loci (n_loci) is left to best_loci_heavy, a work-group a read.
 * Needs search.cl. */

#define RERUN 0x80000000u
#define DIST_BINS 16

/* Task t's loci (of a read's strand), each given to VISIT(strand, end, dist) while GOING holds. */
#define FOR_TASK_LOCI(t, strand, VISIT, GOING)                                       \
    do {                                                                             \
        uint at = src[t] & ~RERUN;                                                   \
        __global const uint *end = (src[t] & RERUN ? rerun_ends : ends) + at;        \
        __global const uchar *dist = (src[t] & RERUN ? rerun_dists : dists) + at;    \
        for (uint j = 0; j < found[t] && (GOING); ++j)                               \
            VISIT(strand, end[j], dist[j]);                                          \
    } while (0)

/* Read r's loci in order (a strand's tasks with loci, each task's loci), each given to
 * VISIT(strand, end, dist) while GOING holds. */
#define FOR_EACH_LOCUS(VISIT, GOING)                                                                       \
    for (uint strand = 0; strand < 2u; ++strand)                                                           \
        for (uint t = strand ? reverse : first; t < (strand ? last : reverse) && found[t] && (GOING); ++t) \
            FOR_TASK_LOCI(t, strand, VISIT, GOING)

__kernel void best_loci(__global const uint *task_base, __global const uint *src,
                        __global const uint *found, __global const uint *ends,
                        __global const uint *rerun_ends, __global const uchar *dists,
                        __global const uchar *rerun_dists, __global const uint *out_base, uint n_reads,
                        uint k, uint all, __global const uint *n_loci, uint heavy, __global uint *out_row,
                        __global uint *out_end, __global uchar *out_dist)
{
    uint r = get_global_id(0);
    if (r >= n_reads || n_loci[r] > heavy)
        return;
    uint first = task_base[2 * r], reverse = task_base[2 * r + 1], last = task_base[2 * r + 2];
    uint slot = out_base[r], limit = out_base[r + 1];
    if (all && k < DIST_BINS) {
        uint at_dist[DIST_BINS];
        for (uint d = 0; d <= k; ++d)
            at_dist[d] = 0u;
#define COUNT_LOCUS(strand, e, d) ++at_dist[d]
        FOR_EACH_LOCUS(COUNT_LOCUS, 1);
#undef COUNT_LOCUS
        for (uint d = 0; d <= k; ++d) {  /* each distance's first slot */
            uint n = at_dist[d];
            at_dist[d] = slot;
            slot += n;
        }
#define PUT_LOCUS(strand, e, d)        \
    do {                               \
        uint s = at_dist[d]++;         \
        out_row[s] = 2 * r + (strand); \
        out_end[s] = (e);              \
        out_dist[s] = (d);             \
    } while (0)
        FOR_EACH_LOCUS(PUT_LOCUS, 1);
#undef PUT_LOCUS
        return;
    }
    for (uint d = 0; d <= k && slot < limit; ++d) {
#define PUT_AT_D(strand, e, dj)               \
    do {                                      \
        if ((dj) == d) {                      \
            out_row[slot] = 2 * r + (strand); \
            out_end[slot] = (e);              \
            out_dist[slot] = (uchar)d;        \
            ++slot;                           \
        }                                     \
    } while (0)
        FOR_EACH_LOCUS(PUT_AT_D, slot < limit);
#undef PUT_AT_D
    }
}

/* The tasks with loci of the row whose tasks are [a, b): row_counts put them first. */
inline uint tasks_with_loci(__global const uint *found, uint a, uint b)
{
    uint lo = a, hi = b;  /* found[t] > 0 before lo, 0 from hi on */
    while (lo < hi) {
        uint mid = lo + (hi - lo) / 2u;
        if (found[mid])
            lo = mid + 1u;
        else
            hi = mid;
    }
    return lo - a;
}

/* Each work-item's run of the read's tasks with loci (its forward strand's, then its reverse
 * one's), given to VISIT(strand, end, dist). */
#define FOR_MY_LOCI(VISIT)                                                                   \
    for (uint v = from; v < to; ++v) {                                                      \
        uint strand = v >= n_forward, t = strand ? reverse + (v - n_forward) : first + v;   \
        FOR_TASK_LOCI(t, strand, VISIT, 1);                                                 \
    }

/* best_loci of the reads listed in heavy_reads (k < DIST_BINS), a work-group a read: each
 * work-item takes a run of the read's tasks with loci, in order, and counts their loci at each
 * distance; those counts, scanned over the work-items (counts: DIST_BINS of local memory a
 * work-item), say where each work-item's loci of a distance go, after the read's loci of smaller
 * distances: best_loci's order. Only the slots before out_base[r + 1] are written. */
__kernel void best_loci_heavy(__global const uint *task_base, __global const uint *src,
                              __global const uint *found, __global const uint *ends,
                              __global const uint *rerun_ends, __global const uchar *dists,
                              __global const uchar *rerun_dists, __global const uint *out_base,
                              __global const uint *heavy_reads, uint k, __global uint *out_row,
                              __global uint *out_end, __global uchar *out_dist, __local uint *counts)
{
    __local uint totals[DIST_BINS];
    uint r = heavy_reads[get_group_id(0)], item = get_local_id(0), items = get_local_size(0);
    uint first = task_base[2 * r], reverse = task_base[2 * r + 1], last = task_base[2 * r + 2];
    uint n_forward = tasks_with_loci(found, first, reverse);
    uint n_tasks = n_forward + tasks_with_loci(found, reverse, last);
    uint from = (uint)((ulong)n_tasks * item / items), to = (uint)((ulong)n_tasks * (item + 1u) / items);
    __local uint *mine = counts + item * DIST_BINS;
    for (uint d = 0; d <= k; ++d)
        mine[d] = 0u;
#define COUNT_LOCUS(strand, e, d) ++mine[d]
    FOR_MY_LOCI(COUNT_LOCUS);
#undef COUNT_LOCUS
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = item; d <= k; d += items) {  /* each distance's counts, scanned over the work-items */
        uint sum = 0;
        for (uint i = 0; i < items; ++i) {
            uint n = counts[i * DIST_BINS + d];
            counts[i * DIST_BINS + d] = sum;
            sum += n;
        }
        totals[d] = sum;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint slot[DIST_BINS], at = out_base[r], limit = out_base[r + 1];
    for (uint d = 0; d <= k; ++d) {
        slot[d] = at + mine[d];
        at += totals[d];
    }
#define PUT_LOCUS(strand, e, d)            \
    do {                                   \
        uint s = slot[d]++;                \
        if (s < limit) {                   \
            out_row[s] = 2 * r + (strand); \
            out_end[s] = (e);              \
            out_dist[s] = (d);             \
        }                                  \
    } while (0)
    FOR_MY_LOCI(PUT_LOCUS);
#undef PUT_LOCUS
}

/* The loci of each of n_rows rows: the sum of its tasks' found counts. The tasks that found loci
 * move, in order, to the front of the row's tasks (found and src), and the places they leave get
 * found 0: best_loci walks a row's tasks only up to the first without loci. */
__kernel void row_counts(__global const uint *task_base, __global uint *found, __global uint *src, uint n_rows,
                         __global uint *count)
{
    uint r = get_global_id(0);
    if (r >= n_rows)
        return;
    uint sum = 0, to = task_base[r];
    for (uint t = task_base[r]; t < task_base[r + 1]; ++t) {
        uint n = found[t];
        if (n == 0)
            continue;
        sum += n;
        if (to < t) {
            found[to] = n;
            src[to] = src[t];
            found[t] = 0;
        }
        ++to;
    }
    count[r] = sum;
}

/* The contig of each kept locus (contig_start: the n_contigs contigs' genome starts, then the
 * genome's end) and where its traceback slice starts: max(contig start, e - (L + k) + 1) for a
 * locus of a row of length L ending at e (marose/extend.py, slice_starts). */
__kernel void place_loci(__global const uint *row, __global const uint *end, uint n,
                         __global const uint *read_length, __global const uint *contig_start,
                         uint n_contigs, uint k, __global uint *contig, __global uint *slice_start)
{
    uint t = get_global_id(0);
    if (t >= n)
        return;
    uint e = end[t];
    uint c = last_at_most(contig_start, n_contigs, e);
    uint reach = read_length[row[t]] + k - 1u; /* e - reach is the slice start the read allows */
    contig[t] = c;
    slice_start[t] = e >= contig_start[c] + reach ? e - reach : contig_start[c];
}
