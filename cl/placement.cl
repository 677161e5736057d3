/* Where each row's patterns go (marose/placement.py, the rule and its proof): fixed_offsets
 * writes the fixed layout's offsets of every row; pattern_costs ranks every read offset of the
 * rows to place by how often its pattern occurs, one segment at a time; place_patterns writes
 * those rows' offsets, the least-cost ones the rule allows.
 *
 * Needs filter.cl (make_pattern, PATTERN_ARGS, seed_hash, NO_PATTERN); width is a pattern's (span
 * + ln), min_gap the rule's least gap. Defines beyond filter.cl's: SEED_SHARE, COST_CAP. */

#define NO_COST 0xFFFFFFFFu

/* A work-item per row: offsets 0, step, 2 step, ... and len - width in its pattern slots. */
__kernel void fixed_offsets(uint width, __global const uint *read_length, __global const uint *read_step,
                            __global const uint *pattern_base, uint n_rows, __global uint *offsets)
{
    uint r = get_global_id(0);
    if (r >= n_rows)
        return;
    uint len = read_length[r], step = read_step[r], first = pattern_base[r], np = pattern_base[r + 1] - first;
    for (uint t = 0; t < np; ++t)
        offsets[first + t] = min(t * step, len - width);
}

/* cost[cost_base[r] + o], for every offset o of each row r of row_list whose pattern's seed is
 * this segment's: the pattern's own positions (times SEED_SHARE when E > 0) plus, when E > 0,
 * its seed's; with whole, the positions of all its neighborhoods within E, what filter_count
 * finds there (a lookup each). exact_cost gets its own positions alone, what an exact pattern
 * finds. Offsets with an N in the seed cost 0 (they are never found). The
 * segments partition the seeds: run on each, it writes every offset. For the estimate a
 * work-item takes LOOKUP_BATCH offsets at a time, each step for all of them before the next, so
 * that their memory reads (cache misses, mostly) overlap; with whole, an offset at a time, its
 * lookups batched as filter_count batches them. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void pattern_costs(PATTERN_ARGS, __global const uchar *reads, __global const uint *read_offset,
                   __global const uint *read_length, SEGMENT_TABLES, __global const uint *row_list,
                   __global const uint *cost_base, uint whole, __global uint *cost, __global uint *exact_cost)
{
    uint r = row_list[get_group_id(0)], lid = get_local_id(0);
    uint len = read_length[r];
    __global const uchar *read = reads + read_offset[r];
    __global uint *out = cost + cost_base[r], *out_exact = exact_cost + cost_base[r];
    uint n_offsets = len - (span + ln) + 1u;
    if (whole) {
        for (uint o = lid; o < n_offsets; o += WG) {
            pattern_t p = make_pattern(read, o, span, ln, seed_mask);
            uint total = 0, alone = 0, visited = 0;
            /* the key itself comes first: its positions are what the pattern finds exactly */
#define ADD_POSITIONS(range)                                                  \
    do {                                                                      \
        uint positions = min((range).y - (range).x, (uint)COST_CAP);          \
        alone = visited++ == 0u ? positions : alone;                          \
        total = min(total + positions, (uint)COST_CAP);                       \
    } while (0)
            if (p.ok && p.seed - seed_lo < n_seeds)
                FOR_EACH_NEIGHBOR(p, true, ADD_POSITIONS);
#undef ADD_POSITIONS
            if (!p.ok || p.seed - seed_lo < n_seeds) {
                out[o] = total;
                out_exact[o] = alone;
            }
        }
        return;
    }
    for (uint first = lid * LOOKUP_BATCH; first < n_offsets; first += WG * LOOKUP_BATCH) {
        uint n = min((uint)LOOKUP_BATCH, n_offsets - first);
        uint seed[LOOKUP_BATCH], key[LOOKUP_BATCH], mine[LOOKUP_BATCH];
        for (uint j = 0; j < n; ++j) {
            pattern_t p = make_pattern(read, first + j, span, ln, seed_mask);
            seed[j] = p.seed - seed_lo;
            key[j] = p.key;
            mine[j] = p.ok && seed[j] < n_seeds;
            if (!p.ok)
                out[first + j] = out_exact[first + j] = 0u;
        }
        seed_hash_t h[LOOKUP_BATCH];
        for (uint j = 0; j < n; ++j)
            if (mine[j])
                h[j] = seed_hash(seed[j], hash_seed, vertex_offset);
        uint slot[LOOKUP_BATCH];
        for (uint j = 0; j < n; ++j)
            if (mine[j])
                slot[j] = phf_slot(key[j], h[j].hash_seed, h[j].base, h[j].part, g);
        for (uint j = 0; j < n; ++j) {
            if (!mine[j])
                continue;
            uint v = slot[j];
            /* the key as the table stores it: its low 8 sizeof(slot_key[0]) bits */
            uint stored = key[j] & (uint)(((ulong)1 << (8 * sizeof(slot_key[0]))) - 1);
            uint c = min(v != NO_KEY && slot_key[v] == stored ? slot_start[v + 1] - slot_start[v] : 0u,
                         (uint)COST_CAP);
            out_exact[first + j] = c;
            if (E > 0) {
                uint seed_count = slot_start[vertex_rank(g, h[j].base + 3u * h[j].part)] -
                                  slot_start[vertex_rank(g, h[j].base)];
                c = min(SEED_SHARE * c + min(seed_count, (uint)COST_CAP), (uint)COST_CAP);
            }
            out[first + j] = c;
        }
    }
}

/* The dynamic program of placement.choose_offsets, by a work-group: f[(j (x + 1) + s) P + o] is
 * the least cost of j + 1 patterns, the last at o, with s gaps shorter than width; a pattern
 * costs c[o] when a short gap follows it (it looks up its neighborhoods), else exact[o]. Each
 * layer j is written by the work-items side by side, an offset each, from the layer before and
 * its prefix minima (least[s P + o]: the least F(j - 1, s, o') over o' <= o, written first by a
 * work-item for each gap count s); the choice is then traced back by one work-item. */
#define F(j, s, o) f[((j) * layers + (s)) * n_offsets + (o)]
#define WIDE(j, s, q) (F(j, s, q) == NO_COST ? NO_COST : F(j, s, q) + (c[q] - exact[q]))
inline void place_row(__local const uint *c, __local const uint *exact, __local uint *f, __local uint *least,
                      uint n_offsets, uint n, uint x, uint width, uint min_gap, __global uint *out)
{
    uint layers = x + 1u, lid = get_local_id(0);
    for (uint o = lid; o < n_offsets; o += WG)
        for (uint s = 0; s < layers; ++s)
            F(0u, s, o) = s == 0u ? exact[o] : NO_COST;
    for (uint j = 1; j < n; ++j) {
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint s = lid; s < layers; s += WG) {
            uint run = NO_COST;
            for (uint o = 0; o < n_offsets; ++o)
                least[s * n_offsets + o] = run = min(run, F(j - 1u, s, o));
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint o = lid; o < n_offsets; o += WG)
            for (uint s = 0; s < layers; ++s) {
                uint best = o >= width ? least[s * n_offsets + o - width] : NO_COST;
                if (s > 0u && o >= min_gap)
                    /* q from o - min_gap down to the first with q + width <= o, or 0 (counting
                       down: a clamped start compiles to a saturating subtraction Oclgrind lacks) */
                    for (uint q = o - min_gap; q + width > o; --q) {
                        best = min(best, WIDE(j - 1u, s - 1u, q));
                        if (q == 0u)
                            break;
                    }
                F(j, s, o) = best == NO_COST ? NO_COST : best + exact[o];
            }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid != 0u)
        return;
    uint o = 0, s = 0, lowest = NO_COST;
    for (uint at = 0; at < n_offsets; ++at)
        for (uint t = 0; t < layers; ++t)
            if (F(n - 1u, t, at) < lowest) {
                lowest = F(n - 1u, t, at);
                o = at;
                s = t;
            }
    out[n - 1u] = o;
    for (uint j = n - 1u; j > 0u; --j) {
        uint want = F(j, s, o) - exact[o];
        for (uint q = 0; q + min_gap <= o; ++q) {
            if (q + width <= o ? F(j - 1u, s, q) == want : s > 0u && WIDE(j - 1u, s - 1u, q) == want) {
                s -= q + width <= o ? 0u : 1u;
                o = q;
                break;
            }
        }
        out[j - 1u] = o;
    }
}
#undef WIDE
#undef F

/* A work-group per row of row_list: row r takes n_placed[r] patterns with at most short_gaps[r]
 * gaps below width, from its costs at cost_base[r], in offsets[pattern_base[r], + n_placed[r]),
 * and NO_PATTERN in its other slots up to pattern_base[r + 1]; its patterns may then be exact
 * (exact_apart[r] = 1: looks_up_neighbors in cl/filter.cl); scratch holds
 * ((n + 1) (x + 1) + 2) (len - width + 1) uints. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void place_patterns(uint width, uint min_gap, __global const uint *row_list, __global const uint *read_length,
                    __global const uint *n_placed, __global const uint *short_gaps,
                    __global const uint *cost_base, __global const uint *cost, __global const uint *exact_cost,
                    __global const uint *pattern_base, __global uint *offsets, __global uchar *exact_apart,
                    __local uint *scratch)
{
    uint r = row_list[get_group_id(0)], lid = get_local_id(0);
    uint n = n_placed[r], np = pattern_base[r + 1] - pattern_base[r];
    uint n_offsets = read_length[r] - width + 1u;
    __global uint *out = offsets + pattern_base[r];
    for (uint o = lid; o < n_offsets; o += WG) {
        scratch[o] = cost[cost_base[r] + o];
        scratch[n_offsets + o] = exact_cost[cost_base[r] + o];
    }
    for (uint t = n + lid; t < np; t += WG)
        out[t] = NO_PATTERN;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint x = short_gaps[r];
    place_row(scratch, scratch + n_offsets, scratch + (3u + x) * n_offsets, scratch + 2u * n_offsets, n_offsets, n,
              x, width, min_gap, out);
    if (lid == 0u)
        exact_apart[r] = 1;
}
