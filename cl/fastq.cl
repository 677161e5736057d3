/* FASTQ records packed on the device, a work-item per record, as marose/reads.py packs them on
 * the host. text holds n whole 4-line records end to end; newlines[4 r + j] is the position of
 * the newline that ends line j of record r. The host has checked the records' layout (header
 * '@', '+' line, as many qualities as bases, no empty sequence); what is left to check here is
 * every byte of the names, sequences and qualities. */

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

/* The length of record r's name (after '@', up to the first whitespace), or 0 when the record
 * fails a check: a name that is empty, longer than max_name or holds a byte that is not
 * printable ASCII, a sequence byte that is not a letter, or a quality outside '!'..'~'. */
__kernel void fastq_fields(__global const uchar *text, __global const uint *newlines, uint n, uint max_name,
                           __global uchar *name_length)
{
    uint r = get_global_id(0);
    if (r >= n)
        return;
    uint head = line_start(newlines, 4u * r) + 1u, head_end = line_end(text, newlines, 4u * r);
    uint name_end = head;
    bool ok = true;
    for (; name_end < head_end; ++name_end) {
        uchar c = text[name_end];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f')
            break;
        ok &= is_printable(c);
    }
    uint length = name_end - head;
    ok &= length > 0u && length <= max_name;
    uint seq = line_start(newlines, 4u * r + 1u), seq_end = line_end(text, newlines, 4u * r + 1u);
    uint qual = line_start(newlines, 4u * r + 3u);
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
