/* marose's PHF neighborhood index answering the index study's queries
 * (marose/index_study/phf.py): each variant of a query's right part (neighbors.cl) is looked up
 * in its seed's perfect hash with phf_slot, as cl/lookup.cl looks up one, and the positions of
 * its slot reported; a key absent from the seed's set that meets its slot's fingerprint
 * (indexer/build.py FINGERPRINT, only when LN > 8) reports that slot's positions too. Defines:
 * LN, E. Needs murmur3.cl, phf.cl, neighbors.cl. */

__kernel void phf_lookup(SEGMENT_TABLES, __global const uint *positions, __global const ulong *queries,
                         uint n, __global const uint *offsets, __global uint *out, uint emit)
{
    uint i = get_global_id(0);
    if (i >= n)
        return;
    uint written = emit ? offsets[i] : 0u;
    ulong query = queries[i];
    uint s = (uint)(query >> (2u * LN)) - seed_lo;
    if (s < n_seeds) {
        uint base = vertex_offset[s], hash = hash_seed[s];
        uint part = (vertex_offset[s + 1] - base) / 3u;
        FOR_EACH_VARIANT(query, LN, variant, {
            uint key = (uint)variant & (uint)((1UL << (2u * LN)) - 1UL);
            uint k = phf_slot(key, hash, base, part, g);
            bool hit = k != NO_KEY && slot_key[k] == (ushort)key;
            uint begin = hit ? slot_start[k] - position_base : 0u;
            uint end = hit ? slot_start[k + 1] - position_base : 0u;
            REPORT_RUN(positions, begin, end)
        });
    }
    if (!emit)
        out[i] = written;
}
