/* Evaluating a seed's BDZ perfect hash (see indexer/bdz.py). Needs murmur3.cl. */

/* A segment's tables (indexer/build.py Segment): the hashes of seeds [seed_lo, seed_lo +
 * n_seeds), indexed from seed_lo; each slot's key fingerprint (its low 16 bits); and slot
 * starts from which position_base is subtracted. */
#define SEGMENT_TABLES __global const uint *hash_seed, __global const uint *vertex_offset,           \
                       __global const uint *g, __global const ushort *slot_key,                        \
                       __global const uint *slot_start, uint seed_lo, uint n_seeds, uint position_base

inline uint3 phf_edge(uint key, uint hash_seed, uint base, uint part)
{
    uint k = murmur3_scramble(key);
    uint s = hash_seed * 3u;
    return (uint3)(base + mul_hi32(murmur3_finish(k, s), part),
                   base + part + mul_hi32(murmur3_finish(k, s + 1u), part),
                   base + 2u * part + mul_hi32(murmur3_finish(k, s + 2u), part));
}

inline uint g_value(__global const uint *g, uint v)
{
    return (g[v >> 4] >> ((v & 15u) * 2u)) & 3u;
}

/* The slot of key in the hash of a seed whose vertices are [base, base + 3 part). */
inline uint phf_slot(uint key, uint hash_seed, uint base, uint part, __global const uint *g)
{
    uint3 e = phf_edge(key, hash_seed, base, part);
    uint j = (g_value(g, e.x) + g_value(g, e.y) + g_value(g, e.z)) % 3u;
    return j == 0u ? e.x : (j == 1u ? e.y : e.z);
}

/* phf_slot of four keys of one seed at once. */
inline uint4 g_value4(__global const uint *g, uint4 v)
{
    uint4 words = (uint4)(g[v.s0 >> 4], g[v.s1 >> 4], g[v.s2 >> 4], g[v.s3 >> 4]);
    return (words >> ((v & 15u) * 2u)) & 3u;
}

inline uint4 phf_slot4(uint4 key, uint hash_seed, uint base, uint part, __global const uint *g)
{
    uint4 k = murmur3_scramble4(key);
    uint s = hash_seed * 3u;
    uint4 e0 = base + mul_hi32x4(murmur3_finish4(k, s), part);
    uint4 e1 = base + part + mul_hi32x4(murmur3_finish4(k, s + 1u), part);
    uint4 e2 = base + 2u * part + mul_hi32x4(murmur3_finish4(k, s + 2u), part);
    uint4 j = (g_value4(g, e0) + g_value4(g, e1) + g_value4(g, e2)) % 3u;
    return j == 0u ? e0 : (j == 1u ? e1 : e2);
}
