/* A q-mer hash table over a segment's position table (marose/qmer_table.py): the position range
 * of each (seed, neighborhood key) found by probing one table instead of evaluating the seed's
 * perfect hash (phf.cl). Built on the device from the segment's tables; exact where slot_key holds
 * whole keys (ln <= 8), so that its ranges are the perfect hash's.
 *
 * 2^bits slots of uint4: the key's low and high words, and the range as slot_start holds it
 * (start, end); a slot is empty while its start is QMER_EMPTY. A key is ((seed << 2 ln) | key),
 * found by linear probing from the top bits of key * QMER_MULTIPLIER. Needs search.cl. */

#define QMER_EMPTY 0xFFFFFFFFu
#define QMER_MULTIPLIER 0x9E3779B97F4A7C15UL

inline ulong qmer_key(uint seed, uint key, uint ln)
{
    return ((ulong)seed << (2u * ln)) | key;
}

inline uint qmer_home(ulong key, uint bits)
{
    return (uint)((key * QMER_MULTIPLIER) >> (64u - bits));
}

inline uint qmer_mask(uint bits)
{
    return (uint)(((ulong)1 << bits) - 1u);
}

/* The range of key as slot_start holds it; (0, 0) when key is not in the table. */
inline uint2 qmer_find(ulong key, __global const uint4 *slots, uint bits)
{
    uint at = qmer_home(key, bits);
    uint4 slot = slots[at];
    while (slot.z != QMER_EMPTY && (slot.x != (uint)key || slot.y != (uint)(key >> 32))) {
        at = (at + 1u) & qmer_mask(bits);
        slot = slots[at];
    }
    return slot.z == QMER_EMPTY ? (uint2)(0u, 0u) : (uint2)(slot.z, slot.w);
}

/* Position ranges of n keys of one seed, as find_batch (filter.cl) gives them. */
inline void qmer_find_batch(uint seed, uint ln, const uint *keys, uint n, uint2 *found,
                            __global const uint4 *slots, uint bits, uint position_base)
{
    for (uint j = 0; j < n; ++j) {
        uint2 range = qmer_find(qmer_key(seed, keys[j], ln), slots, bits);
        /* scalar: Oclgrind's uninitialized-value checker crashed on a select of this uint2 */
        uint base = range.y > range.x ? position_base : 0u;
        found[j] = (uint2)(range.x - base, range.y - base);
    }
}

/* Every slot empty. */
__kernel void qmer_clear(__global uint4 *slots, uint n_slots)
{
    uint i = get_global_id(0);
    if (i < n_slots)
        slots[i] = (uint4)(0u, 0u, QMER_EMPTY, 0u);
}

/* Inserts every vertex with positions of the segment's seeds [seed_lo, seed_lo + n_seeds): a
 * work-item takes run consecutive vertices. A slot is claimed by swapping its start word
 * from QMER_EMPTY (no two keys claim one); its other words are written after, read only by
 * later kernels. */
__kernel void qmer_insert(__global const uint *vertex_offset, __global const ushort *slot_key,
                          __global const uint *slot_start, uint seed_lo, uint n_seeds, uint ln,
                          __global uint4 *slots, uint bits, uint run)
{
    uint first = vertex_offset[0], end = vertex_offset[n_seeds];
    uint v = first + get_global_id(0) * run;
    if (v >= end)
        return;
    uint stop = min(v + run, end);
    uint s = last_at_most(vertex_offset, n_seeds - 1u, v); /* the seed whose vertices hold v */
    for (; v < stop; ++v) {
        while (vertex_offset[s + 1u] <= v)
            ++s;
        uint start = slot_start[v], finish = slot_start[v + 1u];
        if (finish == start)
            continue;
        ulong key = qmer_key(seed_lo + s, slot_key[v], ln);
        uint at = qmer_home(key, bits);
        __global uint *slot = (__global uint *)(slots + at);
        while (atomic_cmpxchg(slot + 2, QMER_EMPTY, start) != QMER_EMPTY) {
            at = (at + 1u) & qmer_mask(bits);
            slot = (__global uint *)(slots + at);
        }
        slot[0] = (uint)key;
        slot[1] = (uint)(key >> 32);
        slot[3] = finish;
    }
}
