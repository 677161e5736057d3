/* The genome's base codes on the device, from its 2-bit packing (four bases a byte, the first
 * in the low bits; N stored as A) and its N runs: unpack_genome writes sixteen bases (four
 * bytes) per work-item, four stores of four where they are all in the genome, then
 * mark_n_runs writes code 4 over each run, a work-item per piece of a run (lookup.run_pieces).
 * (Four-byte vectors: see murmur3.cl on vector widths.) */

inline uchar4 four_bases(uchar b)
{
    return ((uchar4)b >> (uchar4)(0, 2, 4, 6)) & (uchar4)3;
}

__kernel void unpack_genome(__global const uchar *packed, uint length, __global uchar *codes)
{
    uint i = get_global_id(0);
    if (16ul * i >= length)
        return;
    if (16ul * i + 16u <= length) {
        uchar4 b = vload4(i, packed);
        vstore4(four_bases(b.s0), 4 * i, codes);
        vstore4(four_bases(b.s1), 4 * i + 1, codes);
        vstore4(four_bases(b.s2), 4 * i + 2, codes);
        vstore4(four_bases(b.s3), 4 * i + 3, codes);
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
