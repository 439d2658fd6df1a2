#include "trainer/safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/sha256.h"
#include "trainer/safetensors_file.h"

namespace wit {

void write_safetensors(const std::filesystem::path& file, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::vector<torch::Tensor> data;
  for (auto& [name, t] : tensors) {
    WIT_CHECK(t.dtype() == torch::kFloat32, "safetensors export of {} must be fp32", name);
    auto c = t.contiguous();
    const uint64_t bytes = uint64_t(c.numel()) * sizeof(float);
    header[name] = {
        {"dtype", "F32"}, {"shape", c.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(c);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  write_file_atomic(file, [&](std::FILE* f) {
    const uint64_t n = text.size();
    write_all(f, &n, 8, file);
    write_all(f, text.data(), text.size(), file);
    for (auto& c : data) write_all(f, c.data_ptr<float>(), size_t(c.numel()) * sizeof(float), file);
  });
}

NamedTensors read_safetensors(const std::filesystem::path& file,
                              std::map<std::string, std::string>* metadata) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail("cannot open {}", file.string());
  const uint64_t size = std::filesystem::file_size(file);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  if (!in || size < 8 || n > size - 8 || n > (uint64_t(1) << 30))
    fail("{} is not a safetensors file (bad header length)", file.string());
  std::string head(8 + n, '\0');
  in.seekg(0);
  in.read(head.data(), std::streamsize(head.size()));
  const SafetensorsIndex index = parse_safetensors_header(head, size, file.string());
  if (metadata) *metadata = index.metadata;
  NamedTensors out;
  for (auto& e : index.tensors) {
    auto t = torch::empty(e.shape, torch::kFloat32);
    in.seekg(std::streamoff(index.data_offset + e.begin));
    in.read(reinterpret_cast<char*>(t.data_ptr<float>()), std::streamsize(e.end - e.begin));
    if (!in) fail("{}: cannot read tensor {}", file.string(), e.name);
    out.emplace_back(e.name, t);
  }
  return out;
}

void export_gpt2_safetensors(const model::GPTConfig& cfg, const torch::Tensor& flat,
                             const std::filesystem::path& file,
                             const std::map<std::string, std::string>& metadata) {
  WIT_CHECK(flat.numel() == model::gpt_param_count(cfg), "{} parameters for a model of {}",
            flat.numel(), model::gpt_param_count(cfg));
  NamedTensors tensors;
  for (auto& s : model::gpt_param_specs(cfg)) {
    auto t = flat.narrow(0, s.offset, s.numel).view(s.shape);
    tensors.emplace_back(s.name, s.hf_transposed ? t.t().contiguous() : t);
  }
  write_safetensors(file, tensors, metadata);
  write_gpt2_hf_config(cfg, file.parent_path() / "config.json");
}

torch::Tensor import_gpt2_safetensors(const std::filesystem::path& file_or_dir,
                                      const model::GPTConfig& cfg) {
  const std::filesystem::path file = std::filesystem::is_directory(file_or_dir)
                                         ? file_or_dir / "model.safetensors"
                                         : file_or_dir;
  if (!std::filesystem::is_regular_file(file))
    fail("{} does not exist (model.init_from names a model.safetensors or its directory)",
         file.string());
  const NamedTensors named = read_safetensors(file);
  std::map<std::string, torch::Tensor> by_name;
  for (const auto& [name, t] : named) {
    const std::string prefix = "transformer.";
    by_name[name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name] = t;
  }
  torch::Tensor flat = torch::empty({model::gpt_param_count(cfg)}, torch::kFloat32);
  for (const model::ParamSpec& s : model::gpt_param_specs(cfg)) {
    auto it = by_name.find(s.name);
    if (it == by_name.end())
      fail("{} has no tensor {}: not a GPT-2 model of this config's shape", file.string(), s.name);
    torch::Tensor t = s.hf_transposed ? it->second.t() : it->second;
    if (t.sizes() != c10::IntArrayRef(s.shape))
      fail("{}: tensor {} has shape {}, this config's model {}", file.string(), s.name,
           fmt::format("{}", fmt::join(t.sizes(), "x")),
           fmt::format("{}", fmt::join(s.shape, "x")));
    flat.narrow(0, s.offset, s.numel).copy_(t.reshape({-1}));
  }
  return flat;
}

Digest params_sha256(const torch::Tensor& params) {
  const torch::Tensor host = params.to(torch::kCPU, torch::kFloat32).contiguous();
  return sha256(host.data_ptr<float>(), size_t(host.numel()) * sizeof(float));
}

void write_gpt2_hf_config(const model::GPTConfig& cfg, const std::filesystem::path& file) {
  // transformers' GPT2Config for wit's GPT: tanh GELU, LayerNorm eps 1e-5, tied lm head; the
  // end-of-text token is the vocabulary's last (50256 for GPT-2's, 256 for bytes).
  const nlohmann::ordered_json j = {
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"vocab_size", cfg.vocab_size},
      {"n_positions", cfg.context},
      {"n_ctx", cfg.context},
      {"n_embd", cfg.n_embd},
      {"n_layer", cfg.n_layer},
      {"n_head", cfg.n_head},
      {"n_inner", nullptr},
      {"activation_function", "gelu_new"},
      {"resid_pdrop", cfg.dropout},
      {"embd_pdrop", cfg.dropout},
      {"attn_pdrop", cfg.dropout},
      {"layer_norm_epsilon", 1e-5},
      {"initializer_range", 0.02},
      {"scale_attn_weights", true},
      {"tie_word_embeddings", true},
      {"bos_token_id", cfg.vocab_size - 1},
      {"eos_token_id", cfg.vocab_size - 1},
      {"torch_dtype", "float32"},
  };
  write_file_atomic(file, j.dump(2) + "\n");
}

}  // namespace wit
