/* The genome's base codes on the device, from its 2-bit packing (four bases a byte, the first
 * in the low bits; N stored as A) and its N runs: unpack_genome writes 16 * words bases per
 * work-item (words of the packing), as words of four codes where the device is little-endian
 * and the buffers lie on word boundaries (no vload or vstore: PyPI's PoCL calls them, see
 * ops.cl), else a byte at a time; then mark_n_runs writes code 4 over each run, a work-item per
 * piece of a run (lookup.run_pieces). */

/* The codes of a packed byte's four bases, the first in the word's low byte. */
inline uint four_codes(uint b)
{
    return (b & 3u) | (b >> 2 & 3u) << 8 | (b >> 4 & 3u) << 16 | (b >> 6 & 3u) << 24;
}

__kernel void unpack_genome(__global const uchar *packed, uint length, uint words, __global uchar *codes)
{
    ulong first = 16ul * words * get_global_id(0), end = min(first + 16ul * words, (ulong)length);
    if (first >= end)
        return;
#ifdef __ENDIAN_LITTLE__
    if (end - first == 16ul * words && ((ulong)packed & 3u) == 0 && ((ulong)codes & 3u) == 0) {
        __global const uint *in = (__global const uint *)packed + first / 16u;
        __global uint *out = (__global uint *)codes + first / 4u;
        for (uint j = 0; j < words; ++j) {
            uint w = in[j];
            out[4u * j] = four_codes(w & 255u);
            out[4u * j + 1u] = four_codes(w >> 8 & 255u);
            out[4u * j + 2u] = four_codes(w >> 16 & 255u);
            out[4u * j + 3u] = four_codes(w >> 24);
        }
        return;
    }
#endif
    for (ulong j = first; j < end; ++j)
        codes[j] = (packed[j / 4u] >> (2u * (j % 4u))) & 3u;
}

__kernel void mark_n_runs(__global const long *runs, uint n_runs, __global uchar *codes)
{
    uint r = get_global_id(0);
    if (r >= n_runs)
        return;
    for (long p = runs[2 * r]; p < runs[2 * r + 1]; ++p)
        codes[p] = 4;
}
