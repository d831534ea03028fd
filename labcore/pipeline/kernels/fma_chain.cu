// The day-54 kernel: each element goes through `fmas` chained fused multiply-adds,
// x <- x * a + b. The chain is serial per element, so the kernel's cost grows with
// `fmas` while the bytes it moves stay the same. Shared by the CuPy RawKernel and
// the CUDA C++ comparison program, so both run the very same code.
extern "C" __global__ void fma_chain(const float* __restrict__ in, float* __restrict__ out,
                                     long long n, int fmas, float a, float b) {
    long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = in[i];
#pragma unroll 16
    for (int j = 0; j < fmas; ++j) x = fmaf(x, a, b);
    out[i] = x;
}
