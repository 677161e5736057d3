/* MurmurHash3_x86_32 of one 4-byte little-endian key, split like indexer/murmur3.py:
 * the key's scramble is shared by the three hashes of a hyperedge. Defined for one key (uint:
 * murmur3_scramble, murmur3_finish) and for four at once (uint4: murmur3_scramble4,
 * murmur3_finish4), which a CPU evaluates in vector registers. Vectors stay within 16 bytes, the
 * width every x86-64 target passes the same way: a wider one (uint8, uint16) is passed to a
 * builtin in registers that depend on whether AVX or AVX-512 is enabled, and PoCL may compile a
 * kernel for a narrower target than its builtins were built for. */

#define DEFINE_MURMUR3(T, SUFFIX)                           \
    inline T murmur3_scramble##SUFFIX(T key)                \
    {                                                       \
        T k = key * 0xcc9e2d51u;                            \
        k = rotate(k, (T)15u);                               \
        return k * 0x1b873593u;                             \
    }                                                       \
                                                            \
    inline T murmur3_finish##SUFFIX(T scrambled, uint seed) \
    {                                                       \
        T h = seed ^ scrambled;                             \
        h = rotate(h, (T)13u);                               \
        h = h * 5u + 0xe6546b64u;                           \
        h ^= 4u;                                            \
        h ^= h >> 16;                                       \
        h *= 0x85ebca6bu;                                   \
        h ^= h >> 13;                                       \
        h *= 0xc2b2ae35u;                                   \
        h ^= h >> 16;                                       \
        return h;                                           \
    }

DEFINE_MURMUR3(uint, )
DEFINE_MURMUR3(uint4, 4)

__kernel void murmur3_batch(__global const uint *keys, __global const uint *seeds,
                            __global uint *out, uint n)
{
    size_t i = get_global_id(0);
    if (i < n)
        out[i] = murmur3_finish(murmur3_scramble(keys[i]), seeds[i]);
}
