/* Seed and filter (MAROSE paper, Algorithm 1 and Fig. 9): a work-group per read (one strand),
 * a work-item per pattern s_i b_i. Each work-item looks up every neighborhood within Hamming
 * distance E of b_i in the perfect hash of s_i and emits the read start of each genome position
 * found. Two kernels: filter_count counts what each work-item will emit, the host allocates, and
 * filter_emit writes the candidates, sorted and de-duplicated in local memory: by rank when
 * there are at most 4 WG of them, else by a radix sort. A read with more than CAP candidates
 * leaves them as found, for cl/row_sort.cl to sort; its position ranges longer than BIG_RANGE
 * are listed instead, and expand_ranges writes them a work-group each, so that no work-item
 * walks a long range alone. filter_count keeps the ranges it found, up to saved_max a pattern,
 * for filter_emit.
 *
 * The index's pattern shape comes at run time as PATTERN_ARGS (span, ln: the seed's span and
 * the neighborhood's length; seed_mask: bit j set where the mask has '#'), and the bits of a
 * genome position as key_bits, so that one program serves every index. Needs murmur3.cl, phf.cl,
 * search.cl and sort.cl. Defines: E (0..3), LOOKUP_BATCH (lookups hashed before their slots are
 * read), WG (work-group size), CAP (local candidates), BIG_RANGE. */

#define PATTERN_ARGS uint span, uint ln, uint seed_mask
#define NO_PATTERN 0xFFFFFFFFu

typedef struct {
    uint seed;
    uint key;
    uint ok;
} pattern_t;

/* Seed and neighborhood key of the pattern at read offset o; an N in the seed kills it, an N
 * in the neighborhood is looked up as A (the E substitutions may repair it). */
inline pattern_t make_pattern(__global const uchar *read, uint o, PATTERN_ARGS)
{
    pattern_t p = {0u, 0u, 1u};
    for (uint j = 0; j < span; ++j) {
        if (!((seed_mask >> j) & 1u))
            continue;
        uchar c = read[o + j];
        p.ok &= c < 4;
        p.seed = (p.seed << 2) | (c & 3u);
    }
    for (uint j = 0; j < ln; ++j) {
        uchar c = read[o + span + j];
        p.key = (p.key << 2) | (c < 4 ? c : 0u);
    }
    return p;
}

#define NO_SEED 0xFFFFFFFFu /* a pattern slot that is empty or whose seed holds an N */

/* A work-item per row of row_list (n_rows of them): the seed and neighborhood key of each of its
 * pattern slots, so that filter_count and filter_emit, which run for every index segment and
 * take a pattern several times, read them instead of the read's bases. */
__kernel void pattern_keys(PATTERN_ARGS, __global const uchar *reads, __global const uint *read_offset,
                           __global const uint *pattern_offset, __global const uint *pattern_base,
                           __global const uint *row_list, uint n_rows, __global uint2 *pattern_key)
{
    uint i = get_global_id(0);
    if (i >= n_rows)
        return;
    uint r = row_list[i];
    __global const uchar *read = reads + read_offset[r];
    for (uint s = pattern_base[r]; s < pattern_base[r + 1]; ++s) {
        uint o = pattern_offset[s];
        pattern_t p = make_pattern(read, o == NO_PATTERN ? 0u : o, span, ln, seed_mask);
        pattern_key[s] = o != NO_PATTERN && p.ok ? (uint2)(p.seed, p.key) : (uint2)(NO_SEED, 0u);
    }
}

/* The pattern of slot s, as pattern_keys wrote it. */
inline pattern_t stored_pattern(__global const uint2 *pattern_key, uint s)
{
    uint2 k = pattern_key[s];
    pattern_t p = {k.x, k.y, k.x != NO_SEED};
    return p;
}

/* A seed's perfect hash: its vertices are [base, base + 3 part). */
typedef struct {
    uint base;
    uint part;
    uint hash_seed;
} seed_hash_t;

/* seed: numbered from the segment's first */
inline seed_hash_t seed_hash(uint seed, __global const uint *hash_seed, __global const uint *vertex_offset)
{
    seed_hash_t h = {vertex_offset[seed], 0u, hash_seed[seed]};
    h.part = (vertex_offset[seed + 1] - h.base) / 3u;
    return h;
}

/* Calls VISIT(k, ARG) for key and, when wide, every other neighborhood within E substitutions
 * of it (each substitution xors a base with 1, 2 or 3). */
#define FOR_EACH_NEIGHBOR_KEY(key, wide, VISIT, ARG)                                        \
    do {                                                                                    \
        VISIT(key, ARG);                                                                    \
        for (uint i1 = 0; E >= 1 && (wide) && i1 < ln; ++i1)                                \
            for (uint c1 = 1; c1 < 4u; ++c1) {                                              \
                uint k1 = (key) ^ (c1 << (2u * i1));                                        \
                VISIT(k1, ARG);                                                             \
                for (uint i2 = i1 + 1; E >= 2 && i2 < ln; ++i2)                             \
                    for (uint c2 = 1; c2 < 4u; ++c2) {                                      \
                        uint k2 = k1 ^ (c2 << (2u * i2));                                   \
                        VISIT(k2, ARG);                                                     \
                        for (uint i3 = i2 + 1; E >= 3 && i3 < ln; ++i3)                     \
                            for (uint c3 = 1; c3 < 4u; ++c3)                                \
                                VISIT(k2 ^ (c3 << (2u * i3)), ARG);                         \
                    }                                                                       \
            }                                                                               \
    } while (0)

/* Position ranges of n keys of one seed (empty where a key is not in the table). The hashes
 * are all evaluated before any slot is read, so that the slot reads (cache misses, mostly)
 * are independent of each other and overlap. */
inline void find_batch(seed_hash_t h, const uint *keys, uint n, uint2 *found, __global const uint2 *g,
                       __global const ushort *slot_key, __global const uint *slot_start, uint position_base)
{
    uint slot[LOOKUP_BATCH];
#if LOOKUP_BATCH % 4 == 0 /* in fours: keys past n are hashed too, and their slots not read */
    for (uint j = 0; j < n; j += 4) {
        uint4 s = phf_slot4((uint4)(keys[j], keys[j + 1u], keys[j + 2u], keys[j + 3u]), h.hash_seed, h.base, h.part, g);
        slot[j] = s.s0;
        slot[j + 1u] = s.s1;
        slot[j + 2u] = s.s2;
        slot[j + 3u] = s.s3;
    }
#else
    for (uint j = 0; j < n; ++j)
        slot[j] = phf_slot(keys[j], h.hash_seed, h.base, h.part, g);
#endif
    for (uint j = 0; j < n; ++j) {
        uint v = slot[j];
        found[j] = v != NO_KEY && slot_key[v] == (ushort)keys[j]
                       ? (uint2)(slot_start[v], slot_start[v + 1]) - position_base
                       : (uint2)(0u, 0u);
    }
}

/* Calls VISIT(range) for the position range of pattern p's key and, when wide, of every other
 * neighborhood of it, LOOKUP_BATCH lookups at a time. */
#define FOR_EACH_NEIGHBOR(p, wide, VISIT)                                                   \
    do {                                                                                    \
        seed_hash_t h_ = seed_hash(p.seed - seed_lo, hash_seed, vertex_offset);             \
        uint keys_[LOOKUP_BATCH] = {0}, n_ = 0;                                             \
        uint2 found_[LOOKUP_BATCH];                                                         \
        FOR_EACH_NEIGHBOR_KEY(p.key, wide, QUEUE_KEY_, VISIT);                              \
        FLUSH_KEYS_(VISIT);                                                                 \
    } while (0)
#define QUEUE_KEY_(k, VISIT)                                                                \
    do {                                                                                    \
        keys_[n_++] = (k);                                                                  \
        if (n_ == LOOKUP_BATCH)                                                             \
            FLUSH_KEYS_(VISIT);                                                             \
    } while (0)
#define FLUSH_KEYS_(VISIT)                                                                  \
    do {                                                                                    \
        find_batch(h_, keys_, n_, found_, g, slot_key, slot_start, position_base);          \
        for (uint j_ = 0; j_ < n_; ++j_)                                                    \
            VISIT(found_[j_]);                                                              \
        n_ = 0;                                                                             \
    } while (0)

/* Asks for the slot of pattern p's key (and of its neighborhoods, when wide) ahead of its
 * lookup, on a CPU (PREFETCH): the slot reads are the lookups' cache misses, and a work-item's
 * own lookups are too few to overlap them (one a pattern where E = 0). */
#define PREFETCH_SLOT_(k, h)                                                                \
    do {                                                                                    \
        uint slot_ = phf_slot((k), (h).hash_seed, (h).base, (h).part, g);                   \
        if (slot_ != NO_KEY) {                                                              \
            PREFETCH_LINE(slot_key + slot_);                                                \
            PREFETCH_LINE(slot_start + slot_);                                              \
        }                                                                                   \
    } while (0)
#define PREFETCH_G_(k, h)                                                                   \
    do {                                                                                    \
        uint3 e_ = phf_edge((k), (h).hash_seed, (h).base, (h).part);                        \
        PREFETCH_LINE(g + (e_.x >> 4));                                                     \
        PREFETCH_LINE(g + (e_.y >> 4));                                                     \
        PREFETCH_LINE(g + (e_.z >> 4));                                                     \
    } while (0)
/* A pass of filter_count over the work-group's patterns of this segment, VISIT (PREFETCH_G_ or
 * PREFETCH_SLOT_) on each key it will look up, then a barrier: PoCL runs the pass for every
 * work-item before any goes on. */
#define PREFETCH_PASS(VISIT)                                                                \
    do {                                                                                    \
        for (uint t = lid; t < np; t += WG) {                                               \
            pattern_t p = stored_pattern(pattern_key, first + t);                           \
            if (!p.ok || p.seed - seed_lo >= n_seeds)                                       \
                continue;                                                                   \
            uint o = pattern_offset[first + t];                                             \
            bool wide = looks_up_neighbors(pattern_offset, first, t, np, o, span + ln, exact_apart[r]); \
            seed_hash_t h = seed_hash(p.seed - seed_lo, hash_seed, vertex_offset);          \
            FOR_EACH_NEIGHBOR_KEY(p.key, wide, VISIT, h);                                   \
        }                                                                                   \
        barrier(CLK_LOCAL_MEM_FENCE);                                                       \
    } while (0)

/* Whether pattern t of a row (its slots from first, np of them; read offset o) looks up its
 * neighborhoods: in a row whose patterns may be exact (exact_apart: placed, or a fixed layout
 * that allows it), only one followed by a pattern less than a pattern's width apart
 * (marose/placement.py, looks_up_neighbors). */
inline bool looks_up_neighbors(__global const uint *pattern_offset, uint first, uint t, uint np, uint o,
                               uint width, uchar exact_apart)
{
    if (!exact_apart)
        return true;
    uint next = t + 1u < np ? pattern_offset[first + t + 1u] : NO_PATTERN;
    return next != NO_PATTERN && next - o < width;
}

/* Whether any of a row's np pattern slots from first has its seed in this segment. Every
 * work-item reads them all (the same few words), so that the answer is the work-group's. */
inline bool has_pattern_in(__global const uint2 *pattern_key, uint first, uint np, uint seed_lo, uint n_seeds)
{
    for (uint s = first; s < first + np; ++s)
        if (pattern_key[s].x - seed_lo < n_seeds) /* NO_SEED never is */
            return true;
    return false;
}

/* Row r's patterns are numbered from pattern_base[r] to pattern_base[r + 1], pattern P at read
 * offset pattern_offset[P] (cl/placement.cl writes them; NO_PATTERN for a slot left empty);
 * pattern P's non-empty position ranges, the first saved_max of them, go to
 * saved[saved_max P, + saved_max) and their number to n_found[P], so that filter_emit does not
 * look them up again. A work-group per row of row_list. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void filter_count(PATTERN_ARGS, uint saved_max, __global const uint2 *pattern_key,
                  __global const uint *pattern_offset, SEGMENT_TABLES, __global const uint *row_list,
                  __global const uint *pattern_base, __global const uchar *exact_apart,
                  __global uint *item_count, __global uint *read_count,
                  __global uint2 *saved, __global uint *n_found)
{
    __local uint sum[WG];
    uint r = row_list[get_group_id(0)], lid = get_local_id(0);
    uint first = pattern_base[r], np = pattern_base[r + 1] - first;
    uint count = 0, found_here;
    __global uint2 *saved_here;
    if (!has_pattern_in(pattern_key, first, np, seed_lo, n_seeds)) {
        /* a row with no pattern in this segment (one of several) skips the barriers below */
        for (uint t = lid; t < np; t += WG)
            n_found[first + t] = 0;
        item_count[r * WG + lid] = 0;
        if (lid == 0)
            read_count[r] = 0;
        return;
    }
#if PREFETCH /* every work-item asks for its g words, then its slots, before any work-item reads one */
    PREFETCH_PASS(PREFETCH_G_);
    PREFETCH_PASS(PREFETCH_SLOT_);
#endif
#define COUNT(range)                            \
    do {                                        \
        uint2 found = (range);                  \
        if (found.y > found.x) {                \
            if (found_here < saved_max)         \
                saved_here[found_here] = found; \
            ++found_here;                       \
            count += found.y - found.x;         \
        }                                       \
    } while (0)
    for (uint t = lid; t < np; t += WG) {
        pattern_t p = stored_pattern(pattern_key, first + t);
        found_here = 0;
        saved_here = saved + saved_max * (first + t);
        if (p.ok && p.seed - seed_lo < n_seeds) { /* the other seeds are other segments' */
            uint o = pattern_offset[first + t];
            bool wide = looks_up_neighbors(pattern_offset, first, t, np, o, span + ln, exact_apart[r]);
            FOR_EACH_NEIGHBOR(p, wide, COUNT);
        }
        n_found[first + t] = found_here;
    }
#undef COUNT
    item_count[r * WG + lid] = count;
    sum[lid] = count;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            sum[lid] += sum[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        read_count[r] = sum[0];
}

/* The read start of a pattern at read offset o found at genome position q, kept inside q's contig. */
inline uint read_start(uint q, uint o, __global const uint *contig_start, uint n_contigs)
{
    uint first = contig_start[last_at_most(contig_start, n_contigs, q)];
    return q - first >= o ? q - o : first;
}

/* A work-group per row of row_list (every row, or on a CPU only those whose patterns found
 * positions in this segment, the others' out_count left at 0). With sorts 0 no row is sorted
 * here: each is written as found, at out_offset, for the host to sort with other segments'
 * candidates (marose/row_sort.py, sort_rows). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void filter_emit(PATTERN_ARGS, uint saved_max, uint key_bits, uint sorts, __global const uint2 *pattern_key,
                 __global const uint *pattern_offset, SEGMENT_TABLES, __global const uint *row_list,
                 __global const uint *pattern_base, __global const uchar *exact_apart, __global const uint2 *saved,
                 __global const uint *n_found, __global const uint *positions, __global const uint *contig_start, uint n_contigs,
                 __global const uint *item_count, __global const uint *out_offset,
                 __global uint *candidates, __global uint *out_count, __global uint *big_ranges,
                 __global uint *n_big)
{
    __local uint keys_a[LOCAL_KEYS(CAP)], keys_b[LOCAL_KEYS(CAP)], hist[RADIX * WG], buf[WG];
    uint r = row_list[get_group_id(0)], lid = get_local_id(0);
    uint first = pattern_base[r], np = pattern_base[r + 1] - first;
    uint total;
    uint at = scan_items(item_count[r * WG + lid], buf, lid, &total);
    if (total == 0u) { /* the whole work-group: nothing to sort (a row's patterns often find none in a segment) */
        if (lid == 0)
            out_count[r] = 0u;
        return;
    }
    __global uint *out = candidates + out_offset[r];
    bool local_sort = sorts && total <= CAP;
    uint o;
    /* a long range of a row sorted later is left to expand_ranges */
#define EMIT(range)                                                                            \
    do {                                                                                       \
        uint2 found = (range);                                                                 \
        if (!local_sort && found.y - found.x > BIG_RANGE) {                                    \
            __global uint *listed = big_ranges + 4u * atomic_inc(n_big);                       \
            listed[0] = found.x;                                                               \
            listed[1] = found.y;                                                               \
            listed[2] = o;                                                                     \
            listed[3] = out_offset[r] + at;                                                    \
            at += found.y - found.x;                                                           \
        } else                                                                                 \
            for (uint i = found.x; i < found.y; ++i) {                                         \
                uint start = read_start(positions[i], o, contig_start, n_contigs);             \
                if (local_sort)                                                                \
                    keys_a[LOCAL_AT(at)] = start;                                              \
                else                                                                           \
                    out[at] = start;                                                           \
                ++at;                                                                          \
            }                                                                                  \
    } while (0)
    for (uint t = lid; t < np; t += WG) {
        uint pattern = first + t, found_here = n_found[pattern];
        o = pattern_offset[pattern];
        if (found_here <= saved_max) {
            for (uint j = 0; j < found_here; ++j)
                EMIT(saved[saved_max * pattern + j]);
        } else {
            pattern_t p = stored_pattern(pattern_key, pattern);
            bool wide = looks_up_neighbors(pattern_offset, first, t, np, o, span + ln, exact_apart[r]);
            FOR_EACH_NEIGHBOR(p, wide, EMIT);
        }
    }
#undef EMIT
    if (!local_sort)
        return;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint n_unique = store_sorted_unique(keys_a, keys_b, total, hist, buf, lid, key_bits, out);
    if (lid == 0)
        out_count[r] = n_unique;
}

/* A work-group per long range that filter_emit listed (big_ranges[4 g, + 4) = position range,
 * read offset, where its read starts go in candidates); n_big is how many it listed. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void expand_ranges(__global const uint *big_ranges, __global const uint *n_big, __global const uint *positions,
                   __global const uint *contig_start, uint n_contigs, __global uint *candidates)
{
    uint g = get_group_id(0), lid = get_local_id(0);
    if (g >= n_big[0])
        return;
    __global const uint *range = big_ranges + 4u * g;
    uint begin = range[0], end = range[1], o = range[2], at = range[3];
    for (uint i = begin + lid; i < end; i += WG)
        candidates[at + (i - begin)] = read_start(positions[i], o, contig_start, n_contigs);
}
