// Where an unstrided, undilated, ungrouped 3x3 convolution runs oneDNN's Winograd algorithm
// (F(2x2, 3x3), through a blocked buffer of the conv kernel's own, with reorders into and out of
// it) instead of the direct one: where there is enough work per output tile to amortize the
// transforms. The conv kernels' factories decide with it (kernels/cpu/conv_factories.cc), and
// ConvMaxPoolFusionPass, whose pool reads that blocked buffer, fuses only where it holds.
//
// Measured against the direct algorithm (3x3 stride 1 between 1x1 convs, 2 threads, AVX-512;
// Cin and Cout from 32 to 256, outputs 7x7 to 71x71: bench/winograd_rule.py): Winograd loses
// at 32 output channels at every size (up to 1.2x slower; DenseNet's growth convs) and on 7x7
// outputs (1.1-3x slower); from 48 output channels it wins on 28x28 and larger outputs
// (0.5-0.85x the time), and from 96 on 14x14 to 17x17 ones (0.68-0.95x), where 48 and 64
// output channels are even or lose.
//
// Those figures are for a scratchpad that stays in cache. For some geometries oneDNN's
// Winograd transforms the whole image into its scratchpad (tens of MiB where the blocking it
// picks finds no cache-sized tile: Inception-v3's 80 -> 192 conv on 71x71 takes 20-27 MiB), and
// inside a network, whose other layers evict it between runs, it streams from the cache level
// below or from memory. On a machine with an 8 MiB last-level cache that conv took 4.2 ms
// against 3.5 on the direct algorithm (2.4 alone, its scratchpad in cache). On one with a
// 32 MiB L3 (AMD EPYC, Zen 4), its caches evicted before every run, the same conv takes 2.8 ms
// against 6.0 direct, and 128 -> 128 on 32x32 (a UNet stage's convs, 10.5 MiB) 0.57 against
// 1.34 (0.74-0.84 against 1.3-1.4 inside the UNet stage). So winograd_scratch_pays keeps
// Winograd where the scratchpad fits the last-level cache (at least 8 MiB; read from sysfs), or
// where the multiplications it saves outweigh streaming it: at least 64 conv FLOPs per
// scratchpad byte. Measured with bench/sweep.py (ratios to ORT in one run, 8 MiB machine):
// VGG-11's 256 -> 256 on 56x56 (123 per byte) and 512 -> 512 on 28x28 (72) keep it (0.74x;
// 0.81x with the bound at 80), while Inception-v3's conv (52) and Wide-ResNet-50's 256 -> 256
// on 28x28 (55) go direct there (0.995x -> 0.981x and 0.963x -> 0.921x).
// ConvMaxPoolFusionPass, which decides before the scratchpad is known, may so fuse a pool into a
// conv that runs direct: that costs nothing over the two kernels.
//
// Those measurements are one machine's; the outcome depends on the machine (winograd_measured):
// the plan times both algorithms once per geometry and keeps the faster (the measured selection,
// runtime/kernel_selection.h), timing beside them the project's own F(4x4, 3x3) kernel
// (kernels/cpu/cpu_winograd.h: channels-last in and out, no scratchpad of oneDNN's, and on every
// ISA) where it applies. On an AMD EPYC (Zen 5, 2 threads, caches evicted before each run) that one
// took 0.55-0.75x the direct kernel's time on 14x14 to 112x112 maps with 64 to 384 output channels,
// 0.85-0.89x with 32, and as long on 7x7. winograd_pays answers where nothing is measured
// (NNFUSE_WINOGRAD=rule, a conv with a skip convolution) and for ConvMaxPoolFusionPass, which
// decides before any kernel is built.
#pragma once

#include <cstdint>

namespace nnfuse::cost {

// The size of this CPU's last-level data or unified cache (the highest level sysfs lists for
// cpu0), or 0 when it cannot be read. Read once.
int64_t last_level_cache_bytes();

// Whether Winograd pays for a conv of `cin` to `cout` channels with an output of out_h x out_w
// (see above).
bool winograd_pays(int64_t cin, int64_t cout, int64_t out_h, int64_t out_w);

// Where Winograd may win, depending on the machine: from 32 input and 16 output channels, on
// 14x14 and larger outputs. winograd_pays's answer there comes from the machines that
// calibrated it; others differ. DenseNet-121's growth convs (128 -> 32), outside it, lost by up
// to 1.2x on an Intel machine with AVX-512, and on an AMD EPYC (Zen 4) ran in 0.64x the time on
// 56x56 and 28x28 and 0.96x on 14x14 (forced Winograd in `nnfuse profile`, 2 threads). On a
// Zen 5 EPYC, whose full-width AVX-512 doubles the direct algorithm's FMAs, GoogLeNet's five
// 3x3 convs on 14x14 inside it (96 -> 208 to 160 -> 320) ran in 0.45-0.85x the time on the
// direct algorithm, while its 64 -> 192 on 56x56 and 128 -> 192 on 28x28 kept winning with
// Winograd (1.2x). So the plan measures both algorithms here when it is built, once per
// geometry.
bool winograd_measured(int64_t cin, int64_t cout, int64_t out_h, int64_t out_w);

// Whether a Winograd conv of `flops` direct-algorithm FLOPs (2 * Cin * Cout * 9 * output
// pixels) with a scratchpad of `scratch_bytes` still pays on a machine whose last-level cache
// holds `cache_bytes` (see above).
bool winograd_scratch_pays(double flops, int64_t scratch_bytes,
                           int64_t cache_bytes = last_level_cache_bytes());

}  // namespace nnfuse::cost
