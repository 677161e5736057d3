/* Sorting and merging by a work-group of WG work-items (-D WG=), and the merge of each row's
 * sorted runs into one sorted, unique run (merge_runs). */

#define RADIX 16
#define RADIX_BITS 4
#define NONE 0xffffffffu

/* Local arrays of keys hold a spare word after every 32 (LOCAL_AT), so that work-items walking
 * chunks of their own, a multiple of 32 words apart, meet in different banks of a GPU's local
 * memory instead of all in one. */
#define LOCAL_KEYS(n) ((n) + (n) / 32u)
#define LOCAL_AT(i) ((i) + ((i) >> 5))

/* Exclusive prefix sum of one value per work-item (needs scan.cl). */
DEFINE_SCAN_ITEMS(scan_items, WG)

/* Stable LSD radix sort of n keys of key_bits bits in local memory; returns the buffer holding
 * the result. */
inline __local uint *radix_sort(__local uint *src, __local uint *dst, uint n, __local uint *hist,
                                __local uint *buf, uint lid, uint key_bits)
{
    uint chunk = (n + WG - 1) / WG;
    uint lo = min(n, lid * chunk), hi = min(n, lo + chunk);
    for (uint shift = 0; shift < key_bits; shift += RADIX_BITS) {
        for (uint d = 0; d < RADIX; ++d)
            hist[d * WG + lid] = 0;
        for (uint i = lo; i < hi; ++i)
            hist[((src[LOCAL_AT(i)] >> shift) & (RADIX - 1)) * WG + lid]++;
        barrier(CLK_LOCAL_MEM_FENCE);
        /* exclusive scan over hist in (digit, item) order: item lid scans entries [lid*RADIX, ...) */
        uint run = 0;
        for (uint j = 0; j < RADIX; ++j)
            run += hist[lid * RADIX + j];
        uint total;
        uint prefix = scan_items(run, buf, lid, &total);
        for (uint j = 0; j < RADIX; ++j) {
            uint h = hist[lid * RADIX + j];
            hist[lid * RADIX + j] = prefix;
            prefix += h;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint i = lo; i < hi; ++i) {
            uint key = src[LOCAL_AT(i)], at = hist[((key >> shift) & (RADIX - 1)) * WG + lid]++;
            dst[LOCAL_AT(at)] = key;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        __local uint *swap = src;
        src = dst;
        dst = swap;
    }
    return src;
}

/* Sort of at most RANK_SORT_MAX keys by rank, work-item lid ranking keys lid, lid + WG, ...:
 * fewer barriers than the radix sort for the few candidates most reads have. */
#define RANK_SORT_MAX (4 * WG)

inline __local uint *rank_sort(__local uint *src, __local uint *dst, uint n, uint lid)
{
    for (uint i = lid; i < n; i += WG) {
        uint key = src[LOCAL_AT(i)], rank = 0;
        for (uint j = 0; j < n; ++j) {
            uint other = src[LOCAL_AT(j)];
            rank += other < key || (other == key && j < i);
        }
        dst[LOCAL_AT(rank)] = key;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return dst;
}

/* Sorts n keys of key_bits bits in local memory (held at LOCAL_AT) and writes the distinct ones
 * to out in order; returns how many. */
inline uint store_sorted_unique(__local uint *keys, __local uint *spare, uint n, __local uint *hist,
                                __local uint *buf, uint lid, uint key_bits, __global uint *out)
{
    __local uint *sorted = n <= RANK_SORT_MAX ? rank_sort(keys, spare, n, lid)
                                              : radix_sort(keys, spare, n, hist, buf, lid, key_bits);
    uint chunk = (n + WG - 1) / WG;
    uint lo = min(n, lid * chunk), hi = min(n, lo + chunk);
    uint n_unique = 0;
    for (uint i = lo; i < hi; ++i)
        n_unique += i == 0 || sorted[LOCAL_AT(i)] != sorted[LOCAL_AT(i - 1)];
    uint n_total;
    uint dst = scan_items(n_unique, buf, lid, &n_total);
    for (uint i = lo; i < hi; ++i)
        if (i == 0 || sorted[LOCAL_AT(i)] != sorted[LOCAL_AT(i - 1)])
            out[dst++] = sorted[LOCAL_AT(i)];
    return n_total;
}

/* How many of the first d entries of the stable merge of sorted a[0, na) and b[0, nb) come
 * from a: merge_split in global memory, merge_split_local in local memory. */
#define MERGE_SPLIT(name, space)                                                                  \
    inline uint name(space const uint *a, uint na, space const uint *b, uint nb, uint d)          \
    {                                                                                             \
        uint lo = max(d, nb) - nb, hi = min(d, na);                                               \
        while (lo < hi) {                                                                         \
            uint mid = (lo + hi) / 2u;                                                            \
            if (a[mid] <= b[d - 1u - mid])                                                        \
                lo = mid + 1u;                                                                    \
            else                                                                                  \
                hi = mid;                                                                         \
        }                                                                                         \
        return lo;                                                                                \
    }
MERGE_SPLIT(merge_split, __global)
MERGE_SPLIT(merge_split_local, __local)

/* Merges sorted a[0, na) and b[0, nb) into dst (merge path): each work-item writes an equal
 * share of the output, starting where merge_split puts it. */
inline void merge_pair(__global const uint *a, uint na, __global const uint *b, uint nb,
                       __global uint *dst, uint lid)
{
    uint n = na + nb, share = (n + WG - 1) / WG;
    uint d = min(n, lid * share), last = min(n, d + share);
    uint i = merge_split(a, na, b, nb, d), j = d - i;
    for (; d < last; ++d)
        dst[d] = j >= nb || (i < na && a[i] <= b[j]) ? a[i++] : b[j++];
}

/* Whether entry i of sorted values is the first of a value other than NONE. */
inline bool is_first(__global const uint *sorted, uint i)
{
    return sorted[i] != NONE && (i == 0u || sorted[i] != sorted[i - 1u]);
}

/* Keeps the distinct values of sorted src[0, n) other than NONE in out (which may not overlap
 * src); returns how many. */
inline uint store_unique(__global const uint *src, uint n, __global uint *out, __local uint *buf, uint lid)
{
    uint chunk = (n + WG - 1) / WG;
    uint lo = min(n, lid * chunk), hi = min(n, lo + chunk);
    uint n_unique = 0;
    for (uint i = lo; i < hi; ++i)
        n_unique += is_first(src, i);
    uint n_total;
    uint dst = scan_items(n_unique, buf, lid, &n_total);
    for (uint i = lo; i < hi; ++i)
        if (is_first(src, i))
            out[dst++] = src[i];
    return n_total;
}

/* A work-group per row listed in rows: merges the row's sorted runs (run q is
 * values[run_begin[q], run_end[q]), q in [row_runs[r], row_runs[r + 1])) one after the other,
 * alternating between values from out_at (a region no run lies in) and scratch so that the last
 * merge lands in scratch, and keeps the distinct values in values from out_at + out_offset[i];
 * their number goes to out_count[i]. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void merge_runs(__global const uint *rows, __global const uint *row_runs, __global const uint *run_begin,
                __global const uint *run_end, __global uint *values, uint out_at,
                __global const uint *out_offset, __global uint *scratch, __global uint *out_count)
{
    __local uint buf[WG];
    uint i = get_group_id(0), lid = get_local_id(0), r = rows[i];
    uint first = row_runs[r], n_runs = row_runs[r + 1] - first;
    __global uint *a = values + out_at + out_offset[i], *b = scratch + out_offset[i];
    bool in_out = n_runs % 2u == 0u;  /* n_runs - 1 merges follow the copy */
    uint n = run_end[first] - run_begin[first];
    for (uint j = lid; j < n; j += WG)
        (in_out ? a : b)[j] = values[run_begin[first] + j];
    for (uint q = first + 1u; q < first + n_runs; ++q) {
        barrier(CLK_GLOBAL_MEM_FENCE);
        uint size = run_end[q] - run_begin[q];
        merge_pair(in_out ? a : b, n, values + run_begin[q], size, in_out ? b : a, lid);
        n += size;
        in_out = !in_out;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    uint n_unique = store_unique(b, n, a, buf, lid);
    if (lid == 0)
        out_count[i] = n_unique;
}
