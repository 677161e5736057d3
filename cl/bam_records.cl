/* BAM records (SAM spec 4.2) of SAM text, one work-item per line, as marose/bam.py's bam_record
 * makes them (htslib's sam_parse1 and bam_write1: `samtools view -b`). Line i is text
 * [line_start[i], line_start[i + 1]), its newline last. Contig names are matched against the
 * n_contigs names sorted bytewise (contig_names, from contig_name_offset[j] to
 * contig_name_offset[j + 1]), contig_id[j] being the reference id of the j-th. nt16: the 4-bit
 * code of each byte (bam.nt16_table).
 *
 * Two passes: with write 0 each record's length, its block_size included, goes to length[i] (0
 * for a line that bam_record refuses); with write 1 the record goes to out from out_offset[i]. */

#define MAX_FIELDS 11

inline uint put_byte(__global uchar *out, uint at, uint value, bool write)
{
    if (write)
        out[at] = (uchar)value;
    return at + 1u;
}

/* value, little-endian, in its bytes bytes. */
inline uint put_le(__global uchar *out, uint at, uint value, uint bytes, bool write)
{
    for (uint b = 0; b < bytes; ++b)
        at = put_byte(out, at, value >> (8u * b), write);
    return at;
}

/* The decimal text[from, to), a leading '-' allowed; *ok cleared unless it is one. */
inline long decimal(__global const char *text, uint from, uint to, bool *ok)
{
    bool negative = from < to && text[from] == '-';
    from += negative;
    *ok &= from < to && to - from <= 18u;
    long value = 0;
    for (uint j = from; j < to; ++j) {
        uchar digit = (uchar)text[j] - (uchar)'0';
        *ok &= digit < 10u;
        value = value * 10 + digit;
    }
    return negative ? -value : value;
}

inline bool is_star(__global const char *text, uint from, uint to)
{
    return to == from + 1u && text[from] == '*';
}

/* Bytewise order of text[from, to) against name[0, n): negative, zero or positive. */
inline int compare_name(__global const char *text, uint from, uint to, __global const char *name, uint n)
{
    uint length = to - from;
    for (uint j = 0; j < min(length, n); ++j)
        if (text[from + j] != name[j])
            return (int)(uchar)text[from + j] - (int)(uchar)name[j];
    return (int)length - (int)n;
}

/* The reference id of the contig named text[from, to), or -2 when there is none. */
inline int contig_of(__global const char *text, uint from, uint to, __global const char *names,
                     __global const uint *name_offset, __global const int *contig_id, uint n_contigs)
{
    uint low = 0, high = n_contigs;
    while (low < high) {
        uint mid = (low + high) / 2u;
        int order = compare_name(text, from, to, names + name_offset[mid], name_offset[mid + 1] - name_offset[mid]);
        if (order == 0)
            return contig_id[mid];
        if (order < 0)
            high = mid;
        else
            low = mid + 1u;
    }
    return -2;
}

inline int cigar_code(char op)
{
    switch (op) {
    case 'M': return 0;
    case 'I': return 1;
    case 'D': return 2;
    case 'N': return 3;
    case 'S': return 4;
    case 'H': return 5;
    case 'P': return 6;
    case '=': return 7;
    case 'X': return 8;
    default: return -1;
    }
}

/* The BAI bin of [begin, end) (bam.reg2bin); an unplaced record (begin -1) is in bin 4680. */
inline uint reg2bin(long begin, long end)
{
    if (begin < 0)
        return 4680u;
    --end;
    uint first = 4681u;
    for (uint shift = 14u; shift <= 26u; shift += 3u) {
        if (begin >> shift == end >> shift)
            return (uint)(first + (begin >> shift));
        first >>= 3;
    }
    return 0u;
}

/* The CIGAR text[from, to) as BAM operations (written when write); its number of operations
 * and the reference bases it spans in *span; *ok cleared if it is malformed. */
inline uint put_cigar_ops(__global uchar *out, uint at, __global const char *text, uint from, uint to,
                          uint *n_ops, long *span, bool *ok, bool write)
{
    uint length = 0, digits = 0;
    *n_ops = 0;
    *span = 0;
    for (uint j = from; j < to; ++j) {
        uchar digit = (uchar)text[j] - (uchar)'0';
        if (digit < 10u) {
            length = length * 10u + digit;
            ++digits;
            continue;
        }
        int op = cigar_code(text[j]);
        *ok &= op >= 0 && digits > 0u && digits <= 9u;
        if (op == 0 || op == 2 || op == 3 || op == 7 || op == 8)
            *span += length;
        at = put_le(out, at, length << 4 | (uint)max(op, 0), 4u, write);
        ++*n_ops;
        length = digits = 0;
    }
    *ok &= digits == 0u && *n_ops > 0u;
    return at;
}

/* The optional field text[from, to) ("XX:T:value"), typed as bam._tag types it. */
inline uint put_tag(__global uchar *out, uint at, __global const char *text, uint from, uint to, bool *ok,
                    bool write)
{
    *ok &= to >= from + 5u && text[from + 2] == ':' && text[from + 4] == ':';
    if (!*ok)
        return at;
    char kind = text[from + 3];
    at = put_byte(out, put_byte(out, at, text[from], write), text[from + 1], write);
    if (kind == 'i') {
        long value = decimal(text, from + 5u, to, ok);
        if (text[from + 5] == '-') {
            uint bytes = value >= -128 ? 1u : value >= -32768 ? 2u : 4u;
            at = put_byte(out, at, bytes == 1u ? 'c' : bytes == 2u ? 's' : 'i', write);
            return put_le(out, at, (uint)(int)value, bytes, write);
        }
        uint bytes = value <= 255 ? 1u : value <= 65535 ? 2u : 4u;
        at = put_byte(out, at, bytes == 1u ? 'C' : bytes == 2u ? 'S' : 'I', write);
        return put_le(out, at, (uint)value, bytes, write);
    }
    *ok &= kind == 'Z' || kind == 'H' || (kind == 'A' && to == from + 6u);
    at = put_byte(out, at, kind, write);
    for (uint j = from + 5u; j < to; ++j)
        at = put_byte(out, at, text[j], write);
    return kind == 'A' ? at : put_byte(out, at, 0u, write);
}

__kernel void bam_records(uint n_lines, uint write, __global const char *text, __global const uint *line_start,
                          __global const char *contig_names, __global const uint *contig_name_offset,
                          __global const int *contig_id, uint n_contigs, __global const uchar *nt16,
                          __global const uint *out_offset, __global uchar *out, __global uint *length)
{
    uint i = get_global_id(0);
    if (i >= n_lines)
        return;
    bool put = write != 0u, ok = true;
    uint end = line_start[i + 1] - 1u;  /* the newline */
    uint start[MAX_FIELDS + 1];  /* field f is text[start[f], start[f + 1] - 1) */
    uint n_fields = 1;
    start[0] = line_start[i];
    for (uint j = start[0]; j < end && n_fields < MAX_FIELDS; ++j)
        if (text[j] == '\t')
            start[n_fields++] = j + 1u;
    ok &= n_fields == MAX_FIELDS && text[end] == '\n';
    if (!ok) {
        if (!put)
            length[i] = 0u;
        return;
    }
    uint seq_end = start[10] - 1u, qual_end = start[10];
    while (qual_end < end && text[qual_end] != '\t')
        ++qual_end;
    start[MAX_FIELDS] = qual_end + 1u;

    uint flag = (uint)decimal(text, start[1], start[2] - 1u, &ok);
    int ref_id = is_star(text, start[2], start[3] - 1u) ? -1 :
        contig_of(text, start[2], start[3] - 1u, contig_names, contig_name_offset, contig_id, n_contigs);
    long pos = decimal(text, start[3], start[4] - 1u, &ok) - 1;
    ok &= ref_id != -2;
    if (ref_id < 0 || pos < 0) {
        ref_id = -1;
        flag |= 4u;
    }
    uint mapq = (uint)decimal(text, start[4], start[5] - 1u, &ok);
    bool no_cigar = is_star(text, start[5], start[6] - 1u);
    if (no_cigar)
        flag |= 4u;
    uint n_ops = 0;
    long span = 0;
    __global uchar *o = put ? out + out_offset[i] : out;
    uint name_length = start[1] - 1u - start[0];
    uint cigar_at = 36u + name_length + 1u;
    if (!no_cigar)
        put_cigar_ops(o, cigar_at, text, start[5], start[6] - 1u, &n_ops, &span, &ok, put);
    span = (flag & 4u) || span == 0 ? 1 : span;
    int next_id = is_star(text, start[6], start[7] - 1u) ? -1 :
        (start[7] - 1u == start[6] + 1u && text[start[6]] == '=') ? ref_id :
        contig_of(text, start[6], start[7] - 1u, contig_names, contig_name_offset, contig_id, n_contigs);
    ok &= next_id != -2;
    long next_pos = decimal(text, start[7], start[8] - 1u, &ok) - 1;
    if (next_pos < 0)
        next_id = -1;
    long tlen = decimal(text, start[8], start[9] - 1u, &ok);
    uint n_bases = is_star(text, start[9], seq_end) ? 0u : seq_end - start[9];
    bool no_quals = is_star(text, start[10], qual_end);
    ok &= no_quals || qual_end - start[10] == n_bases;
    ok &= name_length > 0u && name_length < 255u && mapq < 256u && flag < 65536u && n_ops < 65536u;

    uint at = 4u;  /* after block_size, written last */
    at = put_le(o, at, (uint)ref_id, 4u, put);
    at = put_le(o, at, (uint)pos, 4u, put);
    at = put_byte(o, at, name_length + 1u, put);
    at = put_byte(o, at, mapq, put);
    at = put_le(o, at, reg2bin(pos, pos + span), 2u, put);
    at = put_le(o, at, n_ops, 2u, put);
    at = put_le(o, at, flag, 2u, put);
    at = put_le(o, at, n_bases, 4u, put);
    at = put_le(o, at, (uint)next_id, 4u, put);
    at = put_le(o, at, (uint)next_pos, 4u, put);
    at = put_le(o, at, (uint)(int)tlen, 4u, put);
    for (uint j = start[0]; j < start[1] - 1u; ++j)
        at = put_byte(o, at, text[j], put);
    at = put_byte(o, at, 0u, put) + 4u * n_ops;  /* the CIGAR is there already */
    for (uint j = 0; j < n_bases; j += 2u) {
        uint high = nt16[(uchar)text[start[9] + j]];
        uint low = j + 1u < n_bases ? nt16[(uchar)text[start[9] + j + 1u]] : 0u;
        at = put_byte(o, at, high << 4 | low, put);
    }
    for (uint j = 0; j < n_bases; ++j)
        at = put_byte(o, at, no_quals ? 0xFFu : (uint)(uchar)text[start[10] + j] - 33u, put);
    for (uint from = start[MAX_FIELDS]; from < end;) {
        uint to = from;
        while (to < end && text[to] != '\t')
            ++to;
        at = put_tag(o, at, text, from, to, &ok, put);
        from = to + 1u;
    }
    if (put)
        put_le(o, 0u, at - 4u, 4u, true);
    else
        length[i] = ok ? at : 0u;
}
