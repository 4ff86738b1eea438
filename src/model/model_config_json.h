// The `model` section on its own, as JSON: what export-hf records in model.safetensors'
// metadata and import reads back (the same keys and checks as the run config's model section,
// core/config_visitors.h), and the first difference between two model configs.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "model/model_config.h"

namespace gossamer::model {

nlohmann::json model_config_to_json(const ModelConfig& config);
// Strict: an unknown key or a wrong type is an error prefixed by `where` ("file: model").
// Not validated (validate() is the caller's).
ModelConfig model_config_from_json(const nlohmann::json& j, const std::string& where);

// "" when a and b describe the same model, else the first difference ("n_layer: 12 vs 2").
// init_std and padded_vocab do not count: they do not change what the weights compute.
std::string model_config_difference(const ModelConfig& a, const ModelConfig& b);

}  // namespace gossamer::model
