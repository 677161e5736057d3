/* MurmurHash3_x86_32 of one 4-byte little-endian key, split like indexer/murmur3.py:
 * the key's scramble is shared by the three hashes of a hyperedge. */

inline uint murmur3_scramble(uint key)
{
    uint k = key * 0xcc9e2d51u;
    k = rotate(k, 15u);
    return k * 0x1b873593u;
}

inline uint murmur3_finish(uint scrambled, uint seed)
{
    uint h = seed ^ scrambled;
    h = rotate(h, 13u);
    h = h * 5u + 0xe6546b64u;
    h ^= 4u;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

__kernel void murmur3_batch(__global const uint *keys, __global const uint *seeds,
                            __global uint *out, uint n)
{
    size_t i = get_global_id(0);
    if (i < n)
        out[i] = murmur3_finish(murmur3_scramble(keys[i]), seeds[i]);
}
