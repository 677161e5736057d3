/* Evaluating a seed's BDZ perfect hash (see indexer/bdz.py). Needs murmur3.cl. */

/* A segment's tables (indexer/build.py Segment): the hashes of seeds [seed_lo, seed_lo +
 * n_seeds), indexed from seed_lo, with g as a pair per 16 vertices (their 2-bit values, and the
 * keys held by the vertices before them); and, for each key in the order of its vertex, its
 * fingerprint (its low 16 bits) and the start of its positions, from which position_base is
 * subtracted. */
#define SEGMENT_TABLES __global const uint *hash_seed, __global const uint *vertex_offset,           \
                       __global const uint2 *g, __global const ushort *slot_key,                       \
                       __global const uint *slot_start, uint seed_lo, uint n_seeds, uint position_base

#define NO_KEY 0xFFFFFFFFu /* phf_slot of a key that lands on a vertex holding none */
#define UNUSED_G 3u        /* g of such a vertex */

inline uint3 phf_edge(uint key, uint hash_seed, uint base, uint part)
{
    uint k = murmur3_scramble(key);
    uint s = hash_seed * 3u;
    return (uint3)(base + mul_hi32(murmur3_finish(k, s), part),
                   base + part + mul_hi32(murmur3_finish(k, s + 1u), part),
                   base + 2u * part + mul_hi32(murmur3_finish(k, s + 2u), part));
}

inline uint g_field(uint2 word, uint v)
{
    return (word.x >> ((v & 15u) * 2u)) & 3u;
}

/* The keys held by the vertices before v, given the g pair that holds v. */
inline uint rank_in(uint2 word, uint v)
{
    uint below = word.x & ((1u << ((v & 15u) * 2u)) - 1u);
    return word.y + (v & 15u) - popcount(below & (below >> 1) & 0x55555555u);
}

inline uint vertex_rank(__global const uint2 *g, uint v)
{
    return rank_in(g[v >> 4], v);
}

/* The number of the key at vertex v, given the g pair that holds v; NO_KEY when v holds none. */
inline uint slot_at(uint2 word, uint v)
{
    return g_field(word, v) == UNUSED_G ? NO_KEY : rank_in(word, v);
}

/* The number of the key at the vertex phf assigns it in the hash of a seed whose vertices are
 * [base, base + 3 part), or NO_KEY when that vertex holds no key (then the key is absent). */
inline uint phf_slot(uint key, uint hash_seed, uint base, uint part, __global const uint2 *g)
{
    uint3 e = phf_edge(key, hash_seed, base, part);
    uint2 wx = g[e.x >> 4], wy = g[e.y >> 4], wz = g[e.z >> 4];
    uint j = (g_field(wx, e.x) + g_field(wy, e.y) + g_field(wz, e.z)) % 3u;
    return j == 0u ? slot_at(wx, e.x) : (j == 1u ? slot_at(wy, e.y) : slot_at(wz, e.z));
}

/* phf_slot of four keys of one seed at once. Each g value is taken from its pair as a scalar:
 * a uint4 built from the pairs' .x segfaults Oclgrind's uninitialized-value checker. */
inline uint4 g_value4(__global const uint2 *g, uint4 v)
{
    return (uint4)(g_field(g[v.s0 >> 4], v.s0), g_field(g[v.s1 >> 4], v.s1), g_field(g[v.s2 >> 4], v.s2),
                   g_field(g[v.s3 >> 4], v.s3));
}

inline uint4 phf_slot4(uint4 key, uint hash_seed, uint base, uint part, __global const uint2 *g)
{
    uint4 k = murmur3_scramble4(key);
    uint s = hash_seed * 3u;
    uint4 e0 = base + mul_hi32x4(murmur3_finish4(k, s), part);
    uint4 e1 = base + part + mul_hi32x4(murmur3_finish4(k, s + 1u), part);
    uint4 e2 = base + 2u * part + mul_hi32x4(murmur3_finish4(k, s + 2u), part);
    uint4 j = (g_value4(g, e0) + g_value4(g, e1) + g_value4(g, e2)) % 3u;
    uint4 v = j == 0u ? e0 : (j == 1u ? e1 : e2);
    return (uint4)(slot_at(g[v.s0 >> 4], v.s0), slot_at(g[v.s1 >> 4], v.s1), slot_at(g[v.s2 >> 4], v.s2),
                   slot_at(g[v.s3 >> 4], v.s3));
}
