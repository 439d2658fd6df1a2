// safetensors files (8-byte little-endian header length, JSON header, raw data), and the
// export of a GPT in Hugging Face GPT-2 layout: its names, Conv1D weights as (in, out),
// the tied lm head left out as transformers expects.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/sha256.h"
#include "trainer/model/gpt.h"

namespace wit {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// fp32 tensors only; written atomically, tensors in the given order.
void write_safetensors(const std::filesystem::path& file, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {});
// Reads every tensor (F32 only); errors name the file and the fault.
NamedTensors read_safetensors(const std::filesystem::path& file,
                              std::map<std::string, std::string>* metadata = nullptr);

// The flat parameter vector `params` (P,) of a model of `cfg`, in Hugging Face GPT-2 layout, and
// beside it config.json (write_gpt2_hf_config), so GPT2LMHeadModel.from_pretrained(dir) loads it.
void export_gpt2_safetensors(const model::GPTConfig& cfg, const torch::Tensor& params,
                             const std::filesystem::path& file,
                             const std::map<std::string, std::string>& metadata = {});

// The flat parameter vector (P,) of a model of `cfg` from a model.safetensors in Hugging Face
// GPT-2 layout (export_gpt2_safetensors' inverse), or from the directory holding one. Names may
// carry transformers' "transformer." prefix; buffers and the tied lm head are ignored. Errors
// name the tensor that is missing or of another shape.
torch::Tensor import_gpt2_safetensors(const std::filesystem::path& file_or_dir,
                                      const model::GPTConfig& cfg);

// SHA-256 of a flat fp32 parameter vector's bytes (little-endian, in order): what
// model.init_sha256 commits a run's given initial weights as.
Digest params_sha256(const torch::Tensor& params);

// transformers' GPT2Config for a model of `cfg`, as JSON.
void write_gpt2_hf_config(const model::GPTConfig& cfg, const std::filesystem::path& file);

}  // namespace wit
