/* FASTQ records checked and packed on the device, as marose/reads.py checks and packs them on
 * the host. text holds n records of 4 lines each, end to end, in pieces; newlines[4 r + j] is the
 * position of the newline that ends line j of record r (find_newlines). */

#define NEWLINE_GROUP 64 /* work-items finding the newlines of a piece */

/* The newlines of each piece of text, a work-group a piece: piece g is text[piece_start[g],
 * piece_start[g + 1]) and its newlines are numbered from piece_line[g]. Each work-item counts
 * the newlines of its part of the piece, then writes their positions after those of the parts
 * before it. */
__kernel void find_newlines(__global const uchar *text, __global const uint *piece_start,
                            __global const uint *piece_line, __global uint *newlines)
{
    __local uint counts[NEWLINE_GROUP];
    uint g = get_group_id(0), t = get_local_id(0);
    uint start = piece_start[g], end = piece_start[g + 1u];
    uint part = (end - start + NEWLINE_GROUP - 1u) / NEWLINE_GROUP;
    uint from = min(start + t * part, end), to = min(from + part, end);
    uint count = 0;
    for (uint i = from; i < to; ++i)
        count += text[i] == '\n';
    counts[t] = count;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint at = piece_line[g];
    for (uint u = 0; u < t; ++u)
        at += counts[u];
    for (uint i = from; i < to; ++i)
        if (text[i] == '\n')
            newlines[at++] = i;
}

/* Where line `line` of text ends, before its "\r\n" or "\n". */
inline uint line_end(__global const uchar *text, __global const uint *newlines, uint line)
{
    uint start = line ? newlines[line - 1u] + 1u : 0u, end = newlines[line];
    return end > start && text[end - 1u] == '\r' ? end - 1u : end;
}

inline uint line_start(__global const uint *newlines, uint line)
{
    return line ? newlines[line - 1u] + 1u : 0u;
}

inline bool is_printable(uchar c)
{
    return c >= '!' && c <= '~';
}

/* The length of record r's name (after '@', up to the first whitespace) and of its sequence; the
 * name's is 0 when the record fails a check: a header line that does not start with '@', a third
 * line that does not start with '+', an empty sequence, qualities not as many as the bases, a
 * name that is empty, longer than max_name or holds a byte that is not printable ASCII, a
 * sequence byte that is not a letter, or a quality outside '!'..'~'. */
__kernel void fastq_fields(__global const uchar *text, __global const uint *newlines, uint n, uint max_name,
                           __global uchar *name_length, __global uint *seq_length)
{
    uint r = get_global_id(0);
    if (r >= n)
        return;
    uint head = line_start(newlines, 4u * r) + 1u, head_end = line_end(text, newlines, 4u * r);
    uint seq = line_start(newlines, 4u * r + 1u), seq_end = line_end(text, newlines, 4u * r + 1u);
    uint qual = line_start(newlines, 4u * r + 3u), qual_end = line_end(text, newlines, 4u * r + 3u);
    /* an empty line starts at its newline, which fails the first-byte tests too */
    bool ok = text[head - 1u] == '@' && text[line_start(newlines, 4u * r + 2u)] == '+' && seq_end > seq &&
              qual_end - qual == seq_end - seq;
    seq_length[r] = seq_end - seq;
    if (!ok) {
        name_length[r] = 0;
        return;
    }
    uint name_end = head;
    for (; name_end < head_end; ++name_end) {
        uchar c = text[name_end];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f')
            break;
        ok &= is_printable(c);
    }
    uint length = name_end - head;
    ok &= length > 0u && length <= max_name;
    for (uint j = 0; j < seq_end - seq; ++j) {
        uchar letter = text[seq + j] & 0xDF; /* clears the bit that makes an ASCII letter lower-case */
        ok &= letter >= 'A' && letter <= 'Z';
        ok &= is_printable(text[qual + j]);
    }
    name_length[r] = ok ? (uchar)length : 0;
}

/* Record r's name to names[name_offset[r]..], its upper-cased letters to seqs[seq_offset[r]..]
 * and its qualities to quals at the same offsets. */
__kernel void fastq_pack(__global const uchar *text, __global const uint *newlines, uint n,
                         __global const uint *name_offset, __global const uint *seq_offset,
                         __global uchar *names, __global uchar *seqs, __global uchar *quals)
{
    uint r = get_global_id(0);
    if (r >= n)
        return;
    __global const uchar *head = text + line_start(newlines, 4u * r) + 1u;
    __global const uchar *seq = text + line_start(newlines, 4u * r + 1u);
    __global const uchar *qual = text + line_start(newlines, 4u * r + 3u);
    uint at = name_offset[r], length = name_offset[r + 1u] - at;
    for (uint j = 0; j < length; ++j)
        names[at + j] = head[j];
    at = seq_offset[r];
    length = seq_offset[r + 1u] - at;
    for (uint j = 0; j < length; ++j) {
        seqs[at + j] = seq[j] & 0xDF;
        quals[at + j] = qual[j];
    }
}
