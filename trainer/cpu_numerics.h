// The CPU code paths that decide a step's bits, pinned to one level every x86-64 machine of the
// last decade runs (AVX2 with FMA), so that a run trained on one CPU replays bit for bit on
// another. Left alone, the BLAS (MKL inside libtorch) and ATen's vectorised kernels pick their
// kernels by micro-architecture: an AVX-512 Xeon and an AVX2 EPYC sum in other orders.
//
// The pin is an environment the libraries read when they initialise:
//   MKL_CBWR=AVX2,STRICT        MKL's conditional numerical reproducibility: its AVX2 branch,
//                               the same bits whatever the thread count
//   MKL_ENABLE_INSTRUCTIONS=AVX2  MKL's instruction sets at most AVX2
//   ATEN_CPU_CAPABILITY=avx2    ATen's kernels compiled for AVX2
//   ONEDNN_MAX_CPU_ISA=AVX2     oneDNN at most AVX2
//   OPENBLAS_CORETYPE=Haswell   OpenBLAS's AVX2 kernels, for a libtorch built on OpenBLAS
// pin_cpu_numerics() runs first in main(): where the environment differs it sets it and
// re-executes the process (same pid, so mpirun and Slurm see nothing), so the libraries load
// with it. WIT_CPU_NUMERICS=native leaves the machine's own paths (faster on AVX-512, but such a
// run replays exactly only on the same CPU model); a CPU without AVX2 and FMA runs native.
//
// What took effect, not what was asked for, is recorded in each session's facts
// (cpu_numerics_facts, read back from MKL and ATen), and compared by wit verify and --resume.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace wit {

// The level runs are pinned to.
constexpr const char* kPinnedCpuNumerics = "avx2";

// Sets the pinned environment (unless WIT_CPU_NUMERICS=native or the CPU lacks AVX2/FMA) and,
// where it differed, re-executes /proc/self/exe with the same argv. Call before anything else.
// A WIT_CPU_NUMERICS other than avx2 or native exits with a message.
void pin_cpu_numerics(char** argv);

// Whether this CPU runs the pinned level (AVX2 and FMA).
bool cpu_runs_pinned_level();

// The CPU numerics in effect in this process: {"numerics": "avx2" when every pinned path took
// effect, else "native", "cpu": model, "cpu_vendor", "cpu_isa": the widest vector ISA, "aten":
// ATen's capability, "blas": MKL's version, "mkl_cbwr": MKL's branch and flags}.
nlohmann::json cpu_numerics_facts();

// The part of CPU facts that decides the bits: for a pinned run the level and the effective
// library settings; for a native one also the CPU model and ISA. `libtorch` is the version.
nlohmann::json cpu_numerics_key(const nlohmann::json& facts, const std::string& libtorch);

// "Intel Xeon ... (AVX-512), native numerics (ATen AVX512, MKL branch 0x1), libtorch 2.11.0".
std::string describe_cpu_numerics(const nlohmann::json& key);

}  // namespace wit
