/* Evaluating a seed's BDZ perfect hash (see indexer/bdz.py). Needs murmur3.cl. */

inline uint3 phf_edge(uint key, uint hash_seed, uint base, uint part)
{
    uint k = murmur3_scramble(key);
    uint s = hash_seed * 3u;
    return (uint3)(base + mul_hi(murmur3_finish(k, s), part),
                   base + part + mul_hi(murmur3_finish(k, s + 1u), part),
                   base + 2u * part + mul_hi(murmur3_finish(k, s + 2u), part));
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
