/* Both strands of a batch of reads, a work-item per read: read r is the letters
 * seqs[seq_offset[r]..seq_offset[r + 1]), encoded as marose/dna.py encodes them (A, C, G, T in
 * either case 0..3, any other letter 4). Row 2 r of out is read r and row 2 r + 1 its reverse
 * complement, each padded with N (4) to width, as marose/filter.py's Strands.from_reads makes
 * them. n_count[r] is the number of N in read r. */

inline uchar base_code(uchar letter)
{
    uchar upper = letter & 0xDF; /* clears the bit that makes an ASCII letter lower-case */
    return upper == 'A' ? 0 : upper == 'C' ? 1 : upper == 'G' ? 2 : upper == 'T' ? 3 : 4;
}

__kernel void both_strands(__global const uchar *seqs, __global const uint *seq_offset, uint n, uint width,
                           __global uchar *out, __global uint *n_count)
{
    uint r = get_global_id(0);
    if (r >= n)
        return;
    __global const uchar *read = seqs + seq_offset[r];
    __global uchar *forward = out + (size_t)(2u * r) * width, *reverse = forward + width;
    uint length = seq_offset[r + 1] - seq_offset[r], n_bases = 0;
    for (uint j = 0; j < length; ++j) {
        uchar code = base_code(read[j]);
        forward[j] = code;
        n_bases += code > 3;
        reverse[length - 1u - j] = code < 4 ? 3 - code : 4;
    }
    for (uint j = length; j < width; ++j) {
        forward[j] = 4;
        reverse[j] = 4;
    }
    n_count[r] = n_bases;
}
