/* Binary search shared by the kernels. */

/* Largest i in [0, n] with bounds[i] <= x, for ascending bounds[0..n] (0 when none). */
inline uint last_at_most(__global const uint *bounds, uint n, uint x)
{
    uint lo = 0, hi = n + 1u;
    while (hi - lo > 1u) {
        uint mid = (lo + hi) / 2u;
        if (bounds[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* First i in [0, n) with run[i] >= x (n when none), for ascending run. */
inline uint lower_bound(__global const uint *run, uint n, uint x)
{
    uint lo = 0, hi = n;
    while (lo < hi) {
        uint mid = (lo + hi) / 2u;
        if (run[mid] < x)
            lo = mid + 1u;
        else
            hi = mid;
    }
    return lo;
}
