/* Both strands of a batch of reads, a work-item per read: read r is the letters
 * seqs[seq_offset[r]..seq_offset[r + 1]), encoded as marose/dna.py encodes them (A, C, G, T in
 * either case 0..3, any other letter 4). Row 2 r of out is read r and row 2 r + 1 its reverse
 * complement, each padded with N (4) to width, as marose/filter.py's Strands.from_reads makes
 * them. n_count[r] is the number of N in read r. */

/* A base's code without branches: bits 2 and 1 of A, C, G and T (in either case) are 00, 01, 11
 * and 10, which xor with their higher bit make 0, 1, 2 and 3; bit i of ACGT_BITS marks the letter
 * '@' + i as one of them. */
#define ACGT_BITS ((1u << ('A' - '@')) | (1u << ('C' - '@')) | (1u << ('G' - '@')) | (1u << ('T' - '@')))

inline uchar base_code(uchar letter)
{
    uint upper = letter & 0xDFu; /* clears the bit that makes an ASCII letter lower-case */
    uint bits = (upper >> 1) & 3u, i = upper - '@';
    return i < 32u && ((ACGT_BITS >> i) & 1u) ? (uchar)(bits ^ (bits >> 1)) : 4;
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
