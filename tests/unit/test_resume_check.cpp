// What a resume may change (run/resume_check.h): harmless keys pass, a change of definition is
// an error naming the key and both values unless --allow-change lists it, and a key the
// checkpoint predates compares as the behaviour the checkpoint ran with (so a later change of
// default is refused, not taken silently).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "run/resume_check.h"

using gossamer::Error;
using gossamer::run::check_resume_changes;
using nlohmann::json;

namespace {

json scape_config(json scape) {
  return {{"optimizer", {{"name", "scape"}, {"lr", 1e-3}, {"scape", std::move(scape)}}},
          {"train", {{"steps", 10}, {"seed", 1}}}};
}

// The message of the error check_resume_changes throws ("" when it accepts).
std::string refusal(const json& saved, const json& now, std::vector<std::string> allowed = {}) {
  try {
    check_resume_changes(saved, now, 0, 0, allowed);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ResumeCheck, HarmlessKeysPassDefinitionChangesAreRefusedUnlessAllowed) {
  json saved = scape_config({{"sparsity", 0.99}}), now = saved;
  now["train"]["steps"] = 20;
  EXPECT_EQ(refusal(saved, now), "");
  now["optimizer"]["scape"]["sparsity"] = 0.9;
  const std::string msg = refusal(saved, now);
  EXPECT_NE(msg.find("optimizer.scape.sparsity is 0.99 in the checkpoint and 0.9 now"),
            std::string::npos)
      << msg;
  EXPECT_EQ(refusal(saved, now, {"optimizer.scape.sparsity"}), "");
}

TEST(ResumeCheck, AKeyTheCheckpointPredatesComparesAsTheBehaviourItRanWith) {
  const json saved = scape_config({{"sparsity", 0.99}});  // written before "normaliser" existed
  EXPECT_EQ(refusal(saved, scape_config({{"sparsity", 0.99}, {"normaliser", "step"}})), "");
  const std::string msg = refusal(saved, scape_config({{"sparsity", 0.99}, {"normaliser", "age"}}));
  EXPECT_NE(msg.find("optimizer.scape.normaliser is \"step\" in the checkpoint and \"age\" now"),
            std::string::npos)
      << msg;
  EXPECT_NE(refusal(saved, scape_config({{"sparsity", 0.99}, {"error_feedback", "replay"}})), "");
  // A key without a recorded earlier behaviour is not compared when the checkpoint lacks it.
  EXPECT_EQ(refusal(saved, scape_config({{"sparsity", 0.99}, {"shard_block_kb", 4.0}})), "");
}

// The sections declare their own resume metadata (a static resume_keys()): the table collected
// from them holds each section's entries under its dotted prefix, and only config keys.
TEST(ResumeCheck, EachSectionDeclaresItsResumeKeys) {
  const gossamer::run::ResumeKeys& r = gossamer::run::resume_keys();
  EXPECT_EQ(r.before.at("optimizer.scape.mask_score"), "momentum");
  EXPECT_EQ(r.before.at("optimizer.scape.sparsity_ramp_steps"), 0);
  EXPECT_EQ(r.before.at("optimizer.smet.ramp_from_start"), true);
  // The gossip graph's key, declared once, under both sections that embed it.
  EXPECT_EQ(r.before.at("optimizer.gasloc.mix_momentum"), 0.0);
  EXPECT_EQ(r.before.at("optimizer.gossip.mix_momentum"), 0.0);
  EXPECT_EQ(r.before.size(), 14u);
  for (const char* section : {"kernels.", "metrics.", "parallel."})
    EXPECT_NE(std::find(r.harmless_sections.begin(), r.harmless_sections.end(), section),
              r.harmless_sections.end())
        << section;
  EXPECT_EQ(r.harmless_sections.size(), 3u);
  for (const char* key : {"train.steps", "data.micro_batch", "optimizer.scape.shard_block_kb",
                          "train.init_from", "train.eval_replica_batches"})
    EXPECT_TRUE(gossamer::run::change_is_harmless_on_resume(key)) << key;
  for (const char* key :
       {"train.seed", "data.seq_len", "optimizer.scape.sparsity", "model.n_layer"})
    EXPECT_FALSE(gossamer::run::change_is_harmless_on_resume(key)) << key;
  EXPECT_TRUE(gossamer::run::change_is_harmless_on_resume("parallel.timeout_s"));
}
