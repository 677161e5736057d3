/* Lookups in a q-mer hash table (marose/index_study/qmer_hash.py): every position of each query
 * q-gram, or of its neighbors (neighbors.cl). Defines: LN, E; DIRECT 1: table holds the start of
 * each q-mer's run of positions (4^q + 1 of them); DIRECT 0: table holds 2^BITS slots (uint4:
 * key low and high words, start, count; count 0 when empty), found by linear probing from the
 * top BITS bits of key * HASH_MULTIPLIER. */

#define HASH_MULTIPLIER 0x9E3779B97F4A7C15UL

inline uint2 qmer_run(ulong key, __global const uint *table)
{
#if DIRECT
    return (uint2)(table[key], table[key + 1]);
#else
    __global const uint4 *slots = (__global const uint4 *)table;
    uint at = (uint)((key * HASH_MULTIPLIER) >> (64 - BITS));
    for (;;) {
        uint4 slot = slots[at];
        if (slot.w == 0u)
            return (uint2)(0u, 0u);
        if (slot.x == (uint)key && slot.y == (uint)(key >> 32))
            return (uint2)(slot.z, slot.z + slot.w);
        at = (at + 1u) & ((1u << BITS) - 1u);
    }
#endif
}

__kernel void qmer_lookup(__global const uint *table, __global const uint *positions,
                          __global const ulong *queries, uint n, __global const uint *offsets,
                          __global uint *out, uint emit)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    uint written = emit ? offsets[i] : 0u;
    FOR_EACH_VARIANT(queries[i], LN, key, {
        uint2 run = qmer_run(key, table);
        REPORT_RUN(positions, run.x, run.y)
    });
    if (!emit)
        out[i] = written;
}
