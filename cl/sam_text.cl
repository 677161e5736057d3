/* SAM text of canonical alignments, one work-item per locus: the CIGAR (M/I/D), the MD string
 * and NM of a row of traceback operations (0 match, 1 mismatch, 2 I, 3 D; cl/traceback.cl),
 * as marose/extend.py's alignment_strings writes them. MD follows samtools calmd: a number
 * (perhaps 0) before every mismatch and every run of deleted bases, '^' before deleted bases,
 * insertions skipped, the reference's letter for a mismatch or a deleted base: the IUPAC letter
 * recorded at that position (n_iupac positions iupac_at, ascending, and their letters
 * iupac_letter), else A, C, G, T or N. Needs search.cl.
 * Text rows are text_width bytes; the host gives room for the worst case of k edits. */

inline uint put_char(__global char *out, uint at, char c, bool write)
{
    if (write)
        out[at] = c;
    return at + 1u;
}

/* Writes value in decimal at out[at...] (only counts the digits unless write); returns the new
 * position. The put_ functions below do the same. */
inline uint put_number(__global char *out, uint at, uint value, bool write)
{
    uint scale = 1;
    while (value / scale >= 10u)
        scale *= 10u;
    for (; scale; scale /= 10u)
        at = put_char(out, at, (char)('0' + value / scale % 10u), write);
    return at;
}

inline char base_letter(uchar code)
{
    return code == 0 ? 'A' : code == 1 ? 'C' : code == 2 ? 'G' : code == 3 ? 'T' : 'N';
}

/* The reference's letter at genome position p, as MD writes it (only for mismatches and
 * deletions, so that the search is rare). */
inline char md_letter(__global const uchar *genome, uint p, __global const uint *iupac_at,
                      __global const uchar *iupac_letter, uint n_iupac)
{
    uint i = lower_bound(iupac_at, n_iupac, p);
    return i < n_iupac && iupac_at[i] == p ? (char)iupac_letter[i] : base_letter(genome[p]);
}

/* The CIGAR of count operations. */
inline uint put_cigar(__global char *out, uint at, __global const uchar *op, uint count, bool write)
{
    for (uint i = 0; i < count;) {
        uchar kind = op[i] < 2 ? 0 : op[i];  /* match and mismatch are both M */
        uint run = 0;
        while (i + run < count && (op[i + run] < 2 ? 0 : op[i + run]) == kind)
            ++run;
        at = put_number(out, at, run, write);
        at = put_char(out, at, kind == 0 ? 'M' : kind == 2 ? 'I' : 'D', write);
        i += run;
    }
    return at;
}

/* The MD string of count operations aligned from genome position ref. */
inline uint put_md(__global char *out, uint at, __global const uchar *op, uint count,
                   __global const uchar *genome, uint ref, __global const uint *iupac_at,
                   __global const uchar *iupac_letter, uint n_iupac, bool write)
{
    uint matched = 0;
    for (uint j = 0; j < count; ++j) {
        if (op[j] == 0) {
            ++matched;
            ++ref;
        } else if (op[j] == 1 || (op[j] == 3 && (j == 0 || op[j - 1] != 3))) {
            at = put_number(out, at, matched, write);
            if (op[j] == 3)
                at = put_char(out, at, '^', write);
            at = put_char(out, at, md_letter(genome, ref++, iupac_at, iupac_letter, n_iupac), write);
            matched = 0;
        } else if (op[j] == 3) {
            at = put_char(out, at, md_letter(genome, ref++, iupac_at, iupac_letter, n_iupac), write);
        }
    }
    return put_number(out, at, matched, write);
}

/* Edits among count operations: NM. */
inline uint edit_count(__global const uchar *op, uint count)
{
    uint edits = 0;
    for (uint j = 0; j < count; ++j)
        edits += op[j] != 0;
    return edits;
}

__kernel void alignment_text(__global const uchar *ops, __global const uint *op_count,
                             __global const uint *starts, __global const uchar *genome,
                             __global const uint *iupac_at, __global const uchar *iupac_letter,
                             uint n_iupac, uint n, uint ops_width, uint text_width, __global char *cigar,
                             __global uint *cigar_length, __global char *md, __global uint *md_length,
                             __global uint *nm)
{
    uint t = get_global_id(0);
    if (t >= n)
        return;
    __global const uchar *op = ops + (size_t)t * ops_width;
    uint count = op_count[t];
    cigar_length[t] = put_cigar(cigar + (size_t)t * text_width, 0u, op, count, true);
    md_length[t] = put_md(md + (size_t)t * text_width, 0u, op, count, genome, starts[t], iupac_at, iupac_letter,
                          n_iupac, true);
    nm[t] = edit_count(op, count);
}
