/* An index's segments joined into one on the device (marose/lookup.py, join_on_device): their
 * tables lie end to end, add_to_every moves each segment's vertex and position numbers past
 * those of the segments before it, and join_g packs their g values again, the vertices of each
 * segment following the last one's. */

/* values[first + i] += add for every i < count, a work-item each. */
__kernel void add_to_every(__global uint *values, uint first, uint count, uint add)
{
    uint i = get_global_id(0);
    if (i < count)
        values[first + i] += add;
}

/* The g pairs of segments joined with their vertices end to end: pair p of out (n_pairs of
 * them, two words each) packs vertices 16 p .. 16 p + 15 of the joined numbering, as
 * bdz.pack_g packs them.
 * Segment s's vertices start at vertex_start[s] there (vertex_start[n_segments]: all of them),
 * its own pairs at pair_start[s] of g (the segments' pairs end to end), and keys_before[s] keys
 * are held before its own (keys_before[n_segments]: all of them). Needs phf.cl. */
__kernel void join_g(__global const uint2 *g, __global const uint *vertex_start, __global const uint *pair_start,
                     __global const uint *keys_before, uint n_segments, uint n_pairs, __global uint *out)
{
    uint p = get_global_id(0);
    if (p >= n_pairs)
        return;
    uint first = 16u * p, total = vertex_start[n_segments], s = 0, bits = 0, keys = keys_before[n_segments];
    for (uint t = 0; t < 16u; ++t) {
        uint v = first + t, value = UNUSED_G;
        if (v < total) {
            while (s + 1u < n_segments && vertex_start[s + 1u] <= v)
                ++s;
            uint at = v - vertex_start[s];
            uint2 word = g[pair_start[s] + (at >> 4)];
            value = g_field(word, at);
            if (t == 0u)
                keys = keys_before[s] + rank_in(word, at);
        }
        bits |= value << (2u * t);
    }
    out[2u * p] = bits; /* scalar stores: Oclgrind takes a uint2 built of variables for an uninitialized value */
    out[2u * p + 1u] = keys;
}
