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

// transformers' GPT2Config for a model of `cfg`, as JSON.
void write_gpt2_hf_config(const model::GPTConfig& cfg, const std::filesystem::path& file);

}  // namespace wit
