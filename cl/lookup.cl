/* Many (seed, neighborhood key) lookups at once: the [begin, end) of each one's genome
 * positions in the segment, empty when the pattern does not occur there. Needs murmur3.cl, phf.cl. */

__kernel void lookup(__global const uint *seeds, __global const uint *keys, uint n,
                     SEGMENT_TABLES, __global uint2 *ranges)
{
    size_t i = get_global_id(0);
    if (i >= n)
        return;
    uint s = seeds[i] - seed_lo, key = keys[i];
    if (s >= n_seeds) {
        ranges[i] = (uint2)(0u, 0u);
        return;
    }
    uint base = vertex_offset[s];
    uint part = (vertex_offset[s + 1] - base) / 3u;
    uint k = phf_slot(key, hash_seed[s], base, part, g);
    ranges[i] = k != NO_KEY && slot_key[k] == (ushort)key ? (uint2)(slot_start[k], slot_start[k + 1]) - position_base
                                                          : (uint2)(0u, 0u);
}
