/* Maximal exact matches (GPUMEM): a seed index of a reference tile sampled every STEP positions,
 * built by counting seeds into buckets and sorting each bucket; every query position looked up;
 * each hit extended left and right to its maximal match, which the hit reports only when it is
 * the match's first sampled seed, so that every match comes out once.
 *
 * Work is balanced as GPUMEM's load balancing aims at: the hits of every query position are
 * listed after a prefix sum of their counts, and each hit is extended by a work-item of its own.
 *
 * Defines: SEED_LEN (bases a seed, at most 15), STEP (the sampling step, L - SEED_LEN + 1),
 * MIN_LENGTH (L), BUCKET_SHIFT (a seed's bucket is its key >> BUCKET_SHIFT), RUN (the query
 * positions a work-item of count_hits looks up), WG and SCAN_ITEMS (the work-group size of the
 * scans and the values each of its work-items sums). Sequences are base codes: 0..3 for A, C,
 * G, T and 4 for anything that matches nothing (N, other letters, the separators between
 * contigs and between queries). Needs search.cl and scan.cl. */

#define NO_KEY 0xffffffffu

DEFINE_SCAN_ITEMS(scan_group, WG)

/* The 2-bit key of the seed at seq[at, at + SEED_LEN), or NO_KEY where it runs past n or holds
 * a code other than a base. */
inline uint seed_key(__global const uchar *seq, uint n, uint at)
{
    if (at + SEED_LEN > n)
        return NO_KEY;
    uint key = 0;
    for (uint i = 0; i < SEED_LEN; ++i) {
        uchar c = seq[at + i];
        if (c > 3)
            return NO_KEY;
        key = key << 2 | c;
    }
    return key;
}

/* Sample i of the tile starting at ref position tile_start: its key goes to keys[i] and its
 * bucket's count is raised. */
__kernel void sample_seeds(__global const uchar *ref, uint ref_len, uint tile_start, uint n_samples,
                           __global uint *keys, volatile __global uint *bucket_count)
{
    uint i = get_global_id(0);
    if (i >= n_samples)
        return;
    uint key = seed_key(ref, ref_len, tile_start + i * STEP);
    keys[i] = key;
    if (key != NO_KEY)
        atomic_inc(&bucket_count[key >> BUCKET_SHIFT]);
}

/* Puts each sample in its bucket (in any order within it), counting the bucket's count down to 0. */
__kernel void place_seeds(__global const uint *keys, uint tile_start, uint n_samples,
                          __global const uint *bucket_start, volatile __global uint *bucket_count,
                          __global uint *seed_keys, __global uint *seed_pos)
{
    uint i = get_global_id(0);
    if (i >= n_samples || keys[i] == NO_KEY)
        return;
    uint b = keys[i] >> BUCKET_SHIFT;
    uint at = bucket_start[b] + atomic_dec(&bucket_count[b]) - 1u;
    seed_keys[at] = keys[i];
    seed_pos[at] = tile_start + i * STEP;
}

/* Whether index entry i comes after entry j in (key, position) order. */
inline bool after(__global const uint *keys, __global const uint *pos, uint i, uint j)
{
    return keys[i] > keys[j] || (keys[i] == keys[j] && pos[i] > pos[j]);
}

inline void swap_entries(__global uint *keys, __global uint *pos, uint i, uint j)
{
    uint key = keys[i], at = pos[i];
    keys[i] = keys[j];
    pos[i] = pos[j];
    keys[j] = key;
    pos[j] = at;
}

/* Moves entry lo + root of the heap lo + [0, n) down to its place (a max-heap). */
inline void sift_down(__global uint *keys, __global uint *pos, uint lo, uint root, uint n)
{
    for (uint child = 2u * root + 1u; child < n; child = 2u * root + 1u) {
        if (child + 1u < n && after(keys, pos, lo + child + 1u, lo + child))
            ++child;
        if (!after(keys, pos, lo + child, lo + root))
            return;
        swap_entries(keys, pos, lo + root, lo + child);
        root = child;
    }
}

/* Sorts each bucket by (key, position), a work-item a bucket: a heap sort, so that the bucket
 * of a seed repeated all over a genome (poly-A) costs n log n, not n^2. */
__kernel void sort_buckets(__global const uint *bucket_start, uint n_buckets, __global uint *seed_keys,
                           __global uint *seed_pos)
{
    uint b = get_global_id(0);
    if (b >= n_buckets)
        return;
    uint lo = bucket_start[b], n = bucket_start[b + 1] - lo;
    for (uint root = n / 2u; root > 0u; --root)
        sift_down(seed_keys, seed_pos, lo, root - 1u, n);
    for (uint end = n; end > 1u; --end) {
        swap_entries(seed_keys, seed_pos, lo, lo + end - 1u);
        sift_down(seed_keys, seed_pos, lo, 0u, end - 1u);
    }
}

/* Query positions q_begin + i for i in [RUN * g, RUN * (g + 1)) of work-item g: the first
 * index entry with the position's seed (hit_first[i]) and how many there are (hit_count[i]).
 * The key rolls along the run, a base a position. */
#define KEY_MASK ((1u << (2 * SEED_LEN)) - 1u)

__kernel void count_hits(__global const uchar *qry, uint q_len, uint q_begin, uint n,
                         __global const uint *bucket_start, __global const uint *seed_keys,
                         __global uint *hit_first, __global uint *hit_count)
{
    uint first_i = get_global_id(0) * RUN;
    if (first_i >= n)
        return;
    uint key = 0, bases = 0;  /* the last bases read, and how many since a code other than a base */
    for (uint at = q_begin + first_i, i = first_i; i < min(n, first_i + RUN); ++at) {
        uchar c = at < q_len ? qry[at] : 4;
        key = (key << 2 | (c & 3u)) & KEY_MASK;
        bases = c > 3 ? 0u : bases + 1u;
        if (at + 1u < q_begin + first_i + SEED_LEN)
            continue;  /* the run's first seed is not complete yet */
        uint first = 0, count = 0;
        if (bases >= SEED_LEN) {
            uint b = key >> BUCKET_SHIFT, lo = bucket_start[b], hi = bucket_start[b + 1];
            if (lo < hi) {
                first = lo + lower_bound(seed_keys + lo, hi - lo, key);
                count = lower_bound(seed_keys + first, hi - first, key + 1u);
            }
        }
        hit_first[i] = first;
        hit_count[i] = count;
        ++i;
    }
}

/* Lists the hits of query position q_begin + i from hit_start[i]: its position and index entry. */
__kernel void list_hits(uint q_begin, uint n, __global const uint *hit_first, __global const uint *hit_count,
                        __global const uint *hit_start, __global uint *hit_q, __global uint *hit_entry)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    uint at = hit_start[i], first = hit_first[i];
    for (uint k = 0; k < hit_count[i]; ++k) {
        hit_q[at + k] = q_begin + i;
        hit_entry[at + k] = first + k;
    }
}

/* Hit h extended to its maximal exact match (mem_ref, mem_qry, mem_len), kept (keep[h] = 1)
 * when it is at least MIN_LENGTH long and the hit's seed is its first sampled one: the match
 * starts less than STEP bases before the seed. */
__kernel void extend_hits(__global const uchar *ref, uint ref_len, __global const uchar *qry, uint q_len,
                          __global const uint *hit_q, __global const uint *hit_entry,
                          __global const uint *seed_pos, uint n_hits, __global uint *mem_ref,
                          __global uint *mem_qry, __global uint *mem_len, __global uint *keep)
{
    uint h = get_global_id(0);
    if (h >= n_hits)
        return;
    uint r = seed_pos[hit_entry[h]], q = hit_q[h];
    uint left = 0;
    while (left < STEP && left < r && left < q) {
        uchar c = ref[r - left - 1];
        if (c > 3 || c != qry[q - left - 1])
            break;
        ++left;
    }
    uint right = SEED_LEN;
    if (left < STEP) {
        while (r + right < ref_len && q + right < q_len) {
            uchar c = ref[r + right];
            if (c > 3 || c != qry[q + right])
                break;
            ++right;
        }
    }
    uint length = left + right;
    mem_ref[h] = r - left;
    mem_qry[h] = q - left;
    mem_len[h] = length;
    keep[h] = left < STEP && length >= MIN_LENGTH;
}

/* Copies the kept matches to out_* at their places in the exclusive prefix sum of keep. */
__kernel void gather_mems(uint n_hits, __global const uint *keep, __global const uint *place,
                          __global const uint *mem_ref, __global const uint *mem_qry,
                          __global const uint *mem_len, __global uint *out_ref, __global uint *out_qry,
                          __global uint *out_len)
{
    uint h = get_global_id(0);
    if (h >= n_hits || !keep[h])
        return;
    uint at = place[h];
    out_ref[at] = mem_ref[h];
    out_qry[at] = mem_qry[h];
    out_len[at] = mem_len[h];
}

/* Exclusive prefix sum of values[0, n) into sums in three kernels: scan_parts scans each part
 * of WG * SCAN_ITEMS values and writes its total to part_total; scan_totals scans those (one
 * work-group) and writes the grand total to part_total[n_parts]; add_totals adds each part's
 * offset, and puts the grand total in sums[n]. */
#define PART (WG * SCAN_ITEMS)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void scan_parts(__global const uint *values, uint n, __global uint *sums, __global uint *part_total)
{
    __local uint buf[WG];
    uint lid = get_local_id(0), base = get_group_id(0) * PART + lid * SCAN_ITEMS;
    uint own = 0;
    for (uint k = 0; k < SCAN_ITEMS; ++k)
        own += base + k < n ? values[base + k] : 0u;
    uint total;
    uint run = scan_group(own, buf, lid, &total);
    for (uint k = 0; k < SCAN_ITEMS && base + k < n; ++k) {
        sums[base + k] = run;
        run += values[base + k];
    }
    if (lid == 0)
        part_total[get_group_id(0)] = total;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void scan_totals(__global uint *part_total, uint n_parts)
{
    __local uint buf[WG];
    uint lid = get_local_id(0), carry = 0;
    for (uint at = 0; at < n_parts; at += WG) {
        uint value = at + lid < n_parts ? part_total[at + lid] : 0u;
        uint total;
        uint run = scan_group(value, buf, lid, &total);
        if (at + lid < n_parts)
            part_total[at + lid] = carry + run;
        carry += total;
    }
    if (lid == 0)
        part_total[n_parts] = carry;
}

__kernel void add_totals(__global uint *sums, uint n, __global const uint *part_total)
{
    uint i = get_global_id(0);
    if (i < n)
        sums[i] += part_total[i / PART];
    else if (i == n)
        sums[n] = part_total[(n + PART - 1) / PART];
}

/* The reverse complement of seq[0, n) (codes above 3 stay as they are); dna.reverse_complement
 * is its twin. */
__kernel void reverse_complement(__global const uchar *seq, uint n, __global uchar *out)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    uchar c = seq[n - 1 - i];
    out[i] = c < 4 ? 3 - c : c;
}
