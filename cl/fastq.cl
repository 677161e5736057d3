/* FASTQ records checked and packed on the device, as marose/reads.py checks and packs them on
 * the host. text holds n records of 4 lines each, end to end; newlines[4 r + j] is the position
 * of the newline that ends line j of record r (write_newlines). */

#define NEWLINE_ITEMS 256 /* work-items of a group finding newlines, each in 16 bytes of text */
#define NEWLINE_CHUNK (16 * NEWLINE_ITEMS)

/* The newlines in text[16 i, 16 i + 16) for item i (within size bytes). */
inline uint newlines_in(__global const uchar *text, uint size, uint at)
{
    uint count = 0;
    for (uint j = 0; j < 16u; ++j)
        count += at + j < size && text[at + j] == '\n';
    return count;
}

/* The newlines counted by the items before this one, and by all (needs scan.cl). */
DEFINE_SCAN_ITEMS(scan_counts, NEWLINE_ITEMS)

/* Finding the newlines of text (size bytes), in three passes over chunks of NEWLINE_CHUNK bytes:
 * count_newlines counts each chunk's, scan_chunks (one work-group) turns the counts into where
 * each chunk's newlines are numbered from, and write_newlines writes the position of newline
 * number i to newlines[i]. */
__kernel void count_newlines(__global const uchar *text, uint size, __global uint *chunk_count)
{
    __local uint counts[NEWLINE_ITEMS];
    uint total;
    scan_counts(newlines_in(text, size, 16u * (uint)get_global_id(0)), counts, get_local_id(0), &total);
    if (get_local_id(0) == 0)
        chunk_count[get_group_id(0)] = total;
}

__kernel void scan_chunks(__global uint *chunk_count, uint n_chunks)
{
    __local uint counts[NEWLINE_ITEMS];
    uint t = get_local_id(0), part = (n_chunks + NEWLINE_ITEMS - 1u) / NEWLINE_ITEMS;
    uint from = min(t * part, n_chunks), to = min(from + part, n_chunks), sum = 0, total;
    for (uint c = from; c < to; ++c)
        sum += chunk_count[c];
    uint at = scan_counts(sum, counts, t, &total);
    for (uint c = from; c < to; ++c) {
        uint count = chunk_count[c];
        chunk_count[c] = at;
        at += count;
    }
}

__kernel void write_newlines(__global const uchar *text, uint size, __global const uint *chunk_base,
                             __global uint *newlines)
{
    __local uint counts[NEWLINE_ITEMS];
    uint at = 16u * (uint)get_global_id(0), total;
    uint i = chunk_base[get_group_id(0)] +
             scan_counts(newlines_in(text, size, at), counts, get_local_id(0), &total);
    for (uint j = 0; j < 16u; ++j)
        if (at + j < size && text[at + j] == '\n')
            newlines[i++] = at + j;
}

inline uint line_start(__global const uint *newlines, uint line)
{
    return line ? newlines[line - 1u] + 1u : 0u;
}

/* Where line `line` of text ends, before its "\r\n" or "\n". */
inline uint line_end(__global const uchar *text, __global const uint *newlines, uint line)
{
    uint end = newlines[line];
    return end > line_start(newlines, line) && text[end - 1u] == '\r' ? end - 1u : end;
}

inline bool is_printable(uchar c)
{
    return c >= '!' && c <= '~';
}

/* A sequence byte upper-cased, '.' as N (as marose/reads.py's _upper_letters). */
inline uchar upper_base(uchar c)
{
    return c == '.' ? 'N' : c & 0xDF; /* clears the bit that makes an ASCII letter lower-case */
}

/* The length of record r's name (after '@', up to the first whitespace) and of its sequence, and
 * the letters of the sequence other than A, C, G and T in either case (N to the mapper; '.'
 * reads as N). The name's length is 0 when the record fails a check: a header line that does not
 * start with '@', a third line that does not start with '+', qualities not as many as the bases,
 * a name that is empty, longer than max_name or holds a byte that is not printable ASCII, a
 * sequence byte that is neither a letter nor '.', or a quality outside '!'..'~'. An empty
 * sequence, with an empty quality line, is an empty read. */
__kernel void fastq_fields(__global const uchar *text, __global const uint *newlines, uint n, uint max_name,
                           __global uchar *name_length, __global uint *seq_length, __global uint *n_count)
{
    uint r = get_global_id(0);
    if (r >= n)
        return;
    uint head = line_start(newlines, 4u * r) + 1u, head_end = line_end(text, newlines, 4u * r);
    uint seq = line_start(newlines, 4u * r + 1u), seq_end = line_end(text, newlines, 4u * r + 1u);
    uint qual = line_start(newlines, 4u * r + 3u), qual_end = line_end(text, newlines, 4u * r + 3u);
    /* an empty line starts at its newline, which fails the first-byte tests too */
    bool ok = text[head - 1u] == '@' && text[line_start(newlines, 4u * r + 2u)] == '+' &&
              qual_end - qual == seq_end - seq;
    seq_length[r] = seq_end - seq;
    n_count[r] = 0;
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
    uint n_bases = 0;
    for (uint j = 0; j < seq_end - seq; ++j) {
        uchar letter = upper_base(text[seq + j]);
        ok &= letter >= 'A' && letter <= 'Z';
        ok &= is_printable(text[qual + j]);
        n_bases += letter != 'A' && letter != 'C' && letter != 'G' && letter != 'T';
    }
    name_length[r] = ok ? (uchar)length : 0;
    n_count[r] = n_bases;
}

/* Record r's name to names[name_offset[r]..], its upper-cased letters ('.' as N) to
 * seqs[seq_offset[r]..] and its qualities to quals at the same offsets. */
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
        seqs[at + j] = upper_base(seq[j]);
        quals[at + j] = qual[j];
    }
}
