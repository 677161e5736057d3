/* The genome's base codes on the device, from its 2-bit packing (four bases a byte, the first
 * in the low bits; N stored as A) and its N runs: unpack_genome writes sixteen bases (four
 * bytes) per work-item, one vector store where they are all in the genome, then mark_n_runs
 * writes code 4 over each run, a work-item per run. */

__kernel void unpack_genome(__global const uchar *packed, uint length, __global uchar *codes)
{
    uint i = get_global_id(0);
    if (16ul * i >= length)
        return;
    if (16ul * i + 16u <= length) {
        uchar4 b = vload4(i, packed);
        uint word = b.s0 | (uint)b.s1 << 8 | (uint)b.s2 << 16 | (uint)b.s3 << 24;
        uint16 shift = (uint16)(0u, 2u, 4u, 6u, 8u, 10u, 12u, 14u, 16u, 18u, 20u, 22u, 24u, 26u, 28u, 30u);
        vstore16(convert_uchar16(((uint16)word >> shift) & 3u), i, codes);
        return;
    }
    for (uint j = 16u * i; j < length; ++j)  /* the last bases, fewer than sixteen */
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
