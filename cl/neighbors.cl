/* The keys within Hamming distance E (0..2, a define) of a packed q-gram over its low LN bases
 * (its right part), the q-gram itself first, as marose's filter enumerates neighborhoods
 * (marose/index_study/queries.py neighbors is the twin). BODY runs once for each key, which
 * it finds in KEY. */

#define FOR_EACH_VARIANT(query, LN, KEY, BODY)                                                \
    {                                                                                          \
        ulong KEY = (query);                                                                   \
        BODY;                                                                                  \
        for (uint i_ = 0; E >= 1 && i_ < (LN); ++i_)                                           \
            for (ulong s_ = 1; s_ < 4; ++s_) {                                                 \
                ulong one_ = (query) ^ (s_ << (2u * i_));                                      \
                {                                                                              \
                    ulong KEY = one_;                                                          \
                    BODY;                                                                      \
                }                                                                              \
                for (uint j_ = i_ + 1; E >= 2 && j_ < (LN); ++j_)                              \
                    for (ulong t_ = 1; t_ < 4; ++t_) {                                         \
                        ulong KEY = one_ ^ (t_ << (2u * j_));                                  \
                        BODY;                                                                  \
                    }                                                                          \
            }                                                                                  \
    }

/* How each lookup kernel reports: the count pass writes each query's number of positions to
 * out[i]; the emit pass writes them from out[offsets[i]] on. */
#define REPORT_RUN(positions, begin, end)                                                      \
    {                                                                                          \
        if (emit)                                                                              \
            for (uint k_ = (begin); k_ < (end); ++k_)                                          \
                out[written + k_ - (begin)] = (positions)[k_];                                 \
        written += (end) - (begin);                                                            \
    }
