/* The genome's base codes on the device, from its 2-bit packing (four bases a byte, the first
 * in the low bits; N stored as A) and its N runs: unpack_genome writes a byte's four bases per
 * work-item, then mark_n_runs writes code 4 over each run, a work-item per run. */

__kernel void unpack_genome(__global const uchar *packed, uint length, __global uchar *codes)
{
    uint i = get_global_id(0);
    if (4ul * i >= length)
        return;
    uchar bases = packed[i];
    for (uint j = 0; j < 4u && 4u * i + j < length; ++j)
        codes[4u * i + j] = (bases >> (2u * j)) & 3u;
}

__kernel void mark_n_runs(__global const long *runs, uint n_runs, __global uchar *codes)
{
    uint r = get_global_id(0);
    if (r >= n_runs)
        return;
    for (long p = runs[2 * r]; p < runs[2 * r + 1]; ++p)
        codes[p] = 4;
}
