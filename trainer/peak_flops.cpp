#include "trainer/peak_flops.h"

#include <algorithm>
#include <cctype>
#include <chrono>


namespace wit {

namespace {

struct Part {
  const char* name;  // matched as whole words in the device's name, in this order
  double fp32_tflops, bf16_tflops;
};

// Dense rates per GPU (NVIDIA datasheets; the sparse figures are twice these).
constexpr Part kParts[] = {
    {"H100 PCIe", 51.2, 756.0},   {"H100 NVL", 60.0, 835.0},    {"H200 NVL", 60.0, 835.0},
    {"H100", 66.9, 989.4},        {"H200", 66.9, 989.4},        {"GH200", 66.9, 989.4},
    {"A100", 19.5, 312.0},        {"L40S", 91.6, 362.0},        {"L4", 30.3, 121.0},
    {"A10", 31.2, 125.0},         {"RTX 4090", 82.6, 165.2},    {"RTX A6000", 38.7, 154.8},
};

bool word_at(const std::string& s, size_t at, size_t n) {
  auto edge = [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); };
  return (at == 0 || edge(s[at - 1])) && (at + n == s.size() || edge(s[at + n]));
}

bool has_words(const std::string& s, const std::string& words) {
  for (size_t at = s.find(words); at != std::string::npos; at = s.find(words, at + 1))
    if (word_at(s, at, words.size())) return true;
  return false;
}

}  // namespace

std::optional<double> datasheet_peak_flops(const std::string& device_name, bool bf16) {
  for (const Part& p : kParts)
    if (has_words(device_name, p.name)) return 1e12 * (bf16 ? p.bf16_tflops : p.fp32_tflops);
  return std::nullopt;
}

using Clock = std::chrono::steady_clock;

double measure_matmul_flops(int reps) {
  torch::NoGradGuard g;
  auto a = torch::randn({1024, 1024}), b = torch::randn({1024, 1024});
  a.mm(b);
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    auto c = a.mm(b);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 2.0 * 1024.0 * 1024.0 * 1024.0 / best;
}

double measure_matmul_flops(const Compute& compute, int reps) {
  if (!compute.is_cuda()) return measure_matmul_flops(reps);
  torch::NoGradGuard g;
  const int64_t n = kGpuPeakSize;
  const auto opts =
      torch::TensorOptions().device(compute.device).dtype(compute.bf16 ? torch::kBFloat16
                                                                       : torch::kFloat32);
  auto a = torch::randn({n, n}, opts), b = torch::randn({n, n}, opts);
  auto sync = [&] { synchronize(compute); };
  for (int i = 0; i < 3; ++i) a.mm(b);  // warm-up: kernel choice, clocks
  sync();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    auto c = a.mm(b);
    sync();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 2.0 * double(n) * double(n) * double(n) / best;
}

}  // namespace wit
