/* A kernel that keeps the device busy for a set time, for scripts/probes/release_probe.py, on
 * x[0, n). */

__kernel void spin(__global uint *x, uint n, uint rounds)
{
    if (get_global_id(0) >= n)
        return;
    uint v = x[get_global_id(0)];
    for (uint i = 0; i < rounds; ++i)
        v = v * 1664525u + 1013904223u;
    x[get_global_id(0)] = v;
}
