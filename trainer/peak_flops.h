// The peak a GPU is sold at, for MFU: dense matmul rates from the vendors' datasheets (no
// sparsity), a property of the hardware rather than of a moment. A device not in the table
// (and the CPU) falls back to a matmul timed at start-up, which varies from run to run.
//
//   std::optional<double> p = datasheet_peak_flops("NVIDIA H100 80GB HBM3", /*bf16=*/true);  // 989.4e12
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trainer/compute.h"

namespace wit {

// FLOP/s of one device for bf16 tensor-core matmuls (bf16) or plain fp32 (no TF32: wit's fp32
// path keeps it off); nullopt when the name is not one the table knows.
std::optional<double> datasheet_peak_flops(const std::string& device_name, bool bf16);

// fp32 FLOP/s of a 1024³ matmul on the current intra-op thread count (best of `reps`).
double measure_matmul_flops(int reps = 5);
// The measured fallback: on a GPU an 8192³ matmul in the run's precision (bf16 or fp32) on its
// device, timed with the device synchronised; on the CPU the one above.
constexpr int64_t kGpuPeakSize = 8192;
double measure_matmul_flops(const Compute& compute, int reps = 5);

}  // namespace wit
