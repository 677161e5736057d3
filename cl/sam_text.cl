/* SAM text of canonical alignments, one work-item per locus: the CIGAR (M/I/D), the MD string
 * and NM of a row of traceback operations (0 match, 1 mismatch, 2 I, 3 D; cl/traceback.cl),
 * as marose/extend.py's alignment_strings writes them. MD follows samtools calmd: a number
 * (perhaps 0) before every mismatch and every run of deleted bases, '^' before deleted bases,
 * insertions skipped, the reference base for a mismatch (N for any code above 3).
 * Text rows are text_width bytes; the host gives room for the worst case of k edits. */

/* Writes value in decimal at out[at...]; returns the new position. */
inline uint put_number(__global char *out, uint at, uint value)
{
    char digits[10];
    uint n = 0;
    do {
        uint tenth = value / 10u;
        digits[n++] = (char)('0' + (value - 10u * tenth));
        value = tenth;
    } while (value);
    while (n)
        out[at++] = digits[--n];
    return at;
}

inline char base_letter(uchar code)
{
    return code == 0 ? 'A' : code == 1 ? 'C' : code == 2 ? 'G' : code == 3 ? 'T' : 'N';
}

__kernel void alignment_text(__global const uchar *ops, __global const uint *op_count,
                             __global const uint *starts, __global const uchar *genome, uint n,
                             uint ops_width, uint text_width, __global char *cigar,
                             __global uint *cigar_length, __global char *md, __global uint *md_length,
                             __global uint *nm)
{
    uint t = get_global_id(0);
    if (t >= n)
        return;
    __global const uchar *op = ops + (size_t)t * ops_width;
    __global char *c_out = cigar + (size_t)t * text_width;
    __global char *m_out = md + (size_t)t * text_width;
    uint count = op_count[t], ref = starts[t];
    uint c_at = 0, m_at = 0, matched = 0, edits = 0;
    for (uint i = 0; i < count;) {
        uchar kind = op[i] < 2 ? 0 : op[i];  /* match and mismatch are both M */
        uint run = 0;
        while (i + run < count && (op[i + run] < 2 ? 0 : op[i + run]) == kind)
            ++run;
        c_at = put_number(c_out, c_at, run);
        c_out[c_at++] = kind == 0 ? 'M' : kind == 2 ? 'I' : 'D';
        for (uint j = i; j < i + run; ++j) {
            if (op[j] == 0) {
                ++matched;
                ++ref;
            } else if (op[j] == 1) {
                m_at = put_number(m_out, m_at, matched);
                m_out[m_at++] = base_letter(genome[ref++]);
                matched = 0;
                ++edits;
            } else if (op[j] == 2) {
                ++edits;
            } else {
                if (j == i) {
                    m_at = put_number(m_out, m_at, matched);
                    m_out[m_at++] = '^';
                    matched = 0;
                }
                m_out[m_at++] = base_letter(genome[ref++]);
                ++edits;
            }
        }
        i += run;
    }
    m_at = put_number(m_out, m_at, matched);
    cigar_length[t] = c_at;
    md_length[t] = m_at;
    nm[t] = edits;
}
