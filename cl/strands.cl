/* Both strands of a batch of reads, a work-item per read: reads are rows of width codes padded
 * with N (4); row 2 r of out is read r, row 2 r + 1 its reverse complement (padded with N), as
 * marose/filter.py's Strands.from_reads makes them. n_count[r] is the number of N in read r. */

__kernel void both_strands(__global const uchar *codes, __global const uint *lengths, uint n, uint width,
                           __global uchar *out, __global uint *n_count)
{
    uint r = get_global_id(0);
    if (r >= n)
        return;
    __global const uchar *read = codes + (size_t)r * width;
    __global uchar *forward = out + (size_t)(2u * r) * width, *reverse = forward + width;
    uint length = lengths[r], n_bases = 0;
    for (uint j = 0; j < width; ++j) {
        uchar code = read[j];
        forward[j] = code;
        n_bases += j < length && code > 3;
        uchar mate = j < length ? read[length - 1u - j] : 4;
        reverse[j] = mate < 4 ? 3 - mate : 4;
    }
    n_count[r] = n_bases;
}
