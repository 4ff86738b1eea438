// RunConfig parsing: defaults, strictness (unknown keys, wrong types), --set overrides,
// invariants with messages naming the key, and the resolved-config round trip.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "io/json_path.h"
#include "optim/lr_schedule.h"
#include "run/run_config.h"
#include "test_util.h"

using namespace gossamer;
using nlohmann::json;

namespace {

using gossamer::testing::error_of;

std::string write_temp(const std::string& text) {
  char name[] = "/tmp/gossamer-config-XXXXXX";
  const int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  FILE* f = fdopen(fd, "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return name;
}

}  // namespace

TEST(RunConfig, EmptyObjectGivesDocumentedDefaults) {
  run::RunConfig c = run::parse_run_config(json::object(), "x.json");
  EXPECT_EQ(c.model.family, model::ModelFamily::MODEL_FAMILY_GPT2);
  EXPECT_EQ(c.schedule.decay, optim::Decay::DECAY_COSINE);
  EXPECT_EQ(c.parallel.backend, comm::Backend::BACKEND_AUTO);
  EXPECT_EQ(c.optimizer.name, "adamw");
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 6e-4);
  EXPECT_EQ(c.model.padded_vocab_resolved(), 50304);
  EXPECT_NO_THROW(c.validate(1));
}

TEST(RunConfig, ValuesAreReadIntoTypedFields) {
  json j = {{"model", {{"n_layer", 3}, {"d_model", 96}, {"n_head", 3}}},
            {"data", {{"shuffle", false}, {"train", "a.bin,b.bin"}}},
            {"train", {{"steps", 1e3}, {"seed", 7}}}};
  run::RunConfig c = run::parse_run_config(j, "x.json");
  EXPECT_EQ(c.model.n_layer, 3);
  EXPECT_EQ(c.model.d_model, 96);
  EXPECT_FALSE(c.data.shuffle);
  EXPECT_EQ(c.data.train, "a.bin,b.bin");
  EXPECT_EQ(c.train.steps, 1000);  // 1e3 is an integral number: accepted
  EXPECT_EQ(c.train.seed, 7u);
}

TEST(RunConfig, UnknownKeysAndSectionsAreErrorsNamingTheirPath) {
  EXPECT_NE(error_of([] {
              run::parse_run_config({{"optimizer", {{"lrr", 1}}}}, "r.json");
            }).find("r.json: optimizer.lrr: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              run::parse_run_config({{"optimiser", json::object()}}, "r.json");
            }).find("optimiser: unknown section"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              run::parse_run_config({{"model", 3}}, "r.json");
            }).find("r.json: model: expected an object"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              run::parse_run_config(json::array(), "r.json");
            }).find("expected a JSON object at the top level"),
            std::string::npos);
}

TEST(RunConfig, WrongTypesAreErrorsNamingKeyExpectedAndFound) {
  auto err = [](json j) { return error_of([&] { run::parse_run_config(j, "r.json"); }); };
  EXPECT_NE(
      err({{"train", {{"steps", "10"}}}}).find("train.steps: expected an integer, found string"),
      std::string::npos);
  EXPECT_NE(err({{"data", {{"micro_batch", 2.5}}}}).find("data.micro_batch: expected an integer"),
            std::string::npos);
  EXPECT_NE(err({{"data", {{"shuffle", 1}}}}).find("data.shuffle: expected a boolean"),
            std::string::npos);
  EXPECT_NE(err({{"train", {{"seed", -1}}}}).find("train.seed: expected a non-negative integer"),
            std::string::npos);
  EXPECT_NE(err({{"model", {{"n_layer", 3e10}}}}).find("model.n_layer: expected an integer"),
            std::string::npos);
  EXPECT_NE(err({{"optimizer", {{"lr", "fast"}}}}).find("optimizer.lr: expected a number"),
            std::string::npos);
  // model.family is an enum: an unknown name lists the accepted ones.
  EXPECT_NE(err({{"model", {{"family", "bert"}}}})
                .find("r.json: model.family: expected a string, one of \"gpt2\" or \"llama\", "
                      "found string \"bert\""),
            std::string::npos);
  EXPECT_EQ(run::parse_run_config({{"model", {{"family", "llama"}}}}, "r.json").model.family,
            model::ModelFamily::MODEL_FAMILY_LLAMA);
}

TEST(RunConfig, InvariantsNameTheKeys) {
  auto invalid = [](std::function<void(run::RunConfig&)> edit, int world = 1) {
    run::RunConfig c;
    edit(c);
    return error_of([&] { c.validate(world); });
  };
  EXPECT_NE(invalid([](auto& c) { c.model.n_head = 5; }).find("model.n_head: must divide"),
            std::string::npos);
  EXPECT_NE(invalid([](auto& c) { c.data.seq_len = 2000; }).find("data.seq_len"),
            std::string::npos);
  EXPECT_NE(
      invalid([](auto& c) { c.train.global_batch_tokens = 300; }).find("train.global_batch_tokens"),
      std::string::npos);
  EXPECT_NE(invalid([](auto& c) { c.train.global_batch_tokens = 256 * 3; }, 2)
                .find("ranks = 4 * 64 * 2 = 512"),
            std::string::npos);
  EXPECT_NE(invalid([](auto& c) { c.optimizer.name = "sgd"; }).find("unknown optimizer"),
            std::string::npos);
  EXPECT_NE(invalid([](auto& c) {
              c.optimizer.scape.sparsity = 1;
            }).find("optimizer.scape.sparsity: must lie in [0, 1)"),
            std::string::npos);
  EXPECT_NE(invalid([](auto& c) { c.model.padded_vocab = 100; }).find("model.padded_vocab"),
            std::string::npos);
  EXPECT_NE(invalid([](auto& c) {
              c.train.eval_replica_batches = -1;
            }).find("train.eval_replica_batches: must be >= 0, found -1"),
            std::string::npos);
  run::RunConfig ok;
  ok.train.global_batch_tokens = 256 * 4;
  EXPECT_EQ(ok.grad_accum_steps(1), 4);
  EXPECT_EQ(ok.grad_accum_steps(2), 2);
}

TEST(RunConfig, FileLoadingAppliesOverridesBeforeStrictParsing) {
  const std::string path = write_temp(R"({"optimizer": {"lr": 0.1}, "train": {"steps": 5}})");
  run::RunConfig c = run::load_run_config(path, {"optimizer.lr=3e-4", "train.out_dir=runs/x",
                                                 "data.train=a.bin", "data.shuffle=false"});
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 3e-4);
  EXPECT_EQ(c.train.out_dir, "runs/x");
  EXPECT_EQ(c.data.train, "a.bin");
  EXPECT_FALSE(c.data.shuffle);
  EXPECT_EQ(c.train.steps, 5);
  EXPECT_NE(error_of([&] {
              run::load_run_config(path, {"optimizer.lrx=1"});
            }).find("optimizer.lrx: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of([&] { run::load_run_config(path, {"novalue"}); }).find("KEY=VALUE"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { run::load_run_config(path, {"optimizer.lr.x=1"}); }).find("is not a section"),
      std::string::npos);
  std::remove(path.c_str());
  EXPECT_NE(error_of([&] { run::load_run_config(path, {}); }).find("cannot open config file"),
            std::string::npos);
  const std::string bad = write_temp("{\"train\": {\"steps\": 5,}}");
  EXPECT_NE(error_of([&] { run::load_run_config(bad, {}); }).find("not valid JSON"),
            std::string::npos);
  std::remove(bad.c_str());
}

// Inputs nlohmann::json accepts silently or reports without the file's name.
TEST(RunConfig, StrictJsonNamesTheFileAndTheKey) {
  const std::string dup = write_temp(R"({"train": {"steps": 5, "seed": 1, "steps": 7}})");
  EXPECT_NE(
      error_of([&] { run::load_run_config(dup, {}); }).find(dup + ": duplicate key train.steps"),
      std::string::npos);
  std::remove(dup.c_str());
  const std::string top = write_temp(R"({"train": {}, "model": {}, "train": {}})");
  EXPECT_NE(error_of([&] { run::load_run_config(top, {}); }).find(": duplicate key train ("),
            std::string::npos);
  std::remove(top.c_str());
  const std::string same_name = write_temp(R"({"train": {"steps": 5}, "model": {"steps": 1}})");
  EXPECT_EQ(error_of([&] { run::load_run_config(same_name, {}); }).find("duplicate"),
            std::string::npos);
  std::remove(same_name.c_str());
  const std::string huge = write_temp(R"({"optimizer": {"lr": 1e999}})");
  const std::string e = error_of([&] { run::load_run_config(huge, {}); });
  EXPECT_NE(e.find(huge + ": not valid JSON: a number does not fit"), std::string::npos) << e;
  std::remove(huge.c_str());
  const std::string dir = ::testing::TempDir();
  EXPECT_NE(error_of([&] { run::load_run_config(dir, {}); }).find("is a directory"),
            std::string::npos);
}

TEST(RunConfig, SetRefusesAWholeSection) {
  const std::string path = write_temp(R"({"train": {"steps": 5}})");
  EXPECT_NE(error_of([&] {
              run::load_run_config(path, {"model={}"});
            }).find("--set model={}: a value may not be an object"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              run::load_run_config(path, {"optimizer.scape={\"sparsity\": 0.9}"});
            }).find("may not be an object"),
            std::string::npos);
  std::remove(path.c_str());
}

TEST(RunConfig, DenseWarmupDefaultsToTheLrWarmup) {
  json j = json::parse(R"({"optimizer": {"name": "scape"}, "schedule": {"warmup_steps": 40}})");
  EXPECT_EQ(run::parse_run_config(j, "x").optimizer.scape.dense_warmup_steps, 40);
  j["optimizer"]["scape"]["dense_warmup_steps"] = 7;  // an explicit value is kept
  EXPECT_EQ(run::parse_run_config(j, "x").optimizer.scape.dense_warmup_steps, 7);
  j["optimizer"]["scape"]["dense_warmup_steps"] = 0;
  EXPECT_EQ(run::parse_run_config(j, "x").optimizer.scape.dense_warmup_steps, 0);
  j["optimizer"]["scape"]["dense_warmup_steps"] = -1;
  run::RunConfig c = run::parse_run_config(j, "x");
  EXPECT_EQ(c.optimizer.scape.dense_warmup_steps, 40);
  // The saved config holds the value the run used.
  EXPECT_EQ(run::to_json(c)["optimizer"]["scape"]["dense_warmup_steps"], 40);
  j["optimizer"]["scape"]["dense_warmup_steps"] = -2;
  run::RunConfig bad = run::parse_run_config(j, "x");
  EXPECT_NE(error_of([&] { bad.validate(1); }).find("dense_warmup_steps: must be >= 0, or -1"),
            std::string::npos);
}

TEST(RunConfig, ResolvedConfigRoundTripsAndListsEveryKey) {
  run::RunConfig c;
  c.model.n_layer = 7;
  c.train.out_dir = "somewhere";
  c.optimizer.name = "scape";
  c.optimizer.scape.reading = optim::ScapeReading::SCAPE_READING_B;
  c.optimizer.scape.dense_warmup_steps = 3;  // resolved (-1 is resolved on parsing, below)
  json j = run::to_json(c);
  EXPECT_EQ(j["optimizer"]["scape"]["reading"], "B");  // enums are written by name
  EXPECT_EQ(j["optimizer"]["adams"]["form"], "code");
  EXPECT_EQ(j["schedule"]["decay"], "cosine");
  run::RunConfig back = run::parse_run_config(j, "resolved");
  EXPECT_EQ(run::to_json(back), j);
  EXPECT_EQ(back.model.n_layer, 7);
  EXPECT_EQ(back.optimizer.scape.reading, optim::ScapeReading::SCAPE_READING_B);
  const std::string doc = run::config_reference_markdown();
  std::function<void(const json&, const std::string&)> every_key = [&](const json& o,
                                                                       const std::string& path) {
    for (const auto& [key, value] : o.items()) {
      if (value.is_object()) {
        every_key(value, path + key + ".");
        continue;
      }
      EXPECT_NE(doc.find("`" + path + key + "`"), std::string::npos) << path << key;
    }
  };
  every_key(j, "");
  // A method's section appears in the resolved config only for the method that reads it.
  run::RunConfig dense;
  const json jd = run::to_json(dense);
  EXPECT_FALSE(jd["optimizer"].contains("scape"));
  EXPECT_FALSE(jd["optimizer"].contains("adams"));
}

TEST(RunConfig, EnumsAreParsedByNameAndRejectedByName) {
  auto err = [](json j) { return error_of([&] { run::parse_run_config(j, "r.json"); }); };
  EXPECT_EQ(run::parse_run_config({{"schedule", {{"decay", "linear"}}}}, "r").schedule.decay,
            optim::Decay::DECAY_LINEAR);
  EXPECT_NE(err({{"schedule", {{"decay", "step"}}}})
                .find("r.json: schedule.decay: expected a string, one of \"cosine\", \"linear\", "
                      "\"constant\" or \"wsd\", found string \"step\""),
            std::string::npos);
  EXPECT_NE(err({{"kernels", {{"gemm", "mkl"}}}}).find("kernels.gemm: expected a string, one of"),
            std::string::npos);
  EXPECT_NE(err({{"parallel", {{"backend", "gloo"}}}}).find("parallel.backend: expected"),
            std::string::npos);
  EXPECT_NE(err({{"optimizer", {{"name", "scape"}, {"scape", {{"reading", "C"}}}}}})
                .find("optimizer.scape.reading: expected a string, one of \"A\" or \"B\""),
            std::string::npos);
  EXPECT_NE(err({{"optimizer", {{"name", "adams"}, {"adams", {{"form", "both"}}}}}})
                .find("optimizer.adams.form: expected a string, one of \"code\" or \"paper\""),
            std::string::npos);
}

TEST(RunConfig, MethodSectionsBelongToTheirMethod) {
  auto err = [](json j) { return error_of([&] { run::parse_run_config(j, "r.json"); }); };
  const run::RunConfig c = run::parse_run_config(
      {{"optimizer",
        {{"name", "scape"}, {"scape", {{"sparsity", 0.9}, {"mask_encoding", "bitmap"}}}}}},
      "r.json");
  EXPECT_DOUBLE_EQ(c.optimizer.scape.sparsity, 0.9);
  EXPECT_EQ(c.optimizer.scape.mask_encoding, optim::MaskWire::MASK_WIRE_BITMAP);
  EXPECT_NE(err({{"optimizer", {{"name", "adamw"}, {"scape", {{"sparsity", 0.9}}}}}})
                .find("r.json: optimizer.scape: section not used: optimizer.name is \"adamw\", "
                      "which reads no method section"),
            std::string::npos);
  EXPECT_NE(err({{"optimizer", {{"scape", {{"sparsity", 0.9}}}}}}).find("section not used"),
            std::string::npos);  // the default method, adamw
  EXPECT_NE(err({{"optimizer", {{"name", "scape"}, {"scape", {{"sparsty", 0.9}}}}}})
                .find("r.json: optimizer.scape.sparsty: unknown key (keys of optimizer.scape: "
                      "sparsity,"),
            std::string::npos);
  EXPECT_NE(err({{"optimizer", {{"name", "scape"}, {"scape", 0.9}}}})
                .find("optimizer.scape: expected an object"),
            std::string::npos);
}

TEST(RunConfig, OldFlatOptimizerKeysNameTheirNewPlace) {
  auto err = [](json j) { return error_of([&] { run::parse_run_config(j, "r.json"); }); };
  EXPECT_NE(err({{"optimizer", {{"name", "scape"}, {"sparsity", 0.9}}}})
                .find("r.json: optimizer.sparsity: this key moved to optimizer.scape.sparsity"),
            std::string::npos);
  EXPECT_NE(err({{"optimizer", {{"scape_reading", "B"}}}})
                .find("optimizer.scape_reading: this key moved to optimizer.scape.reading"),
            std::string::npos);
  EXPECT_NE(err({{"optimizer", {{"adams_form", "paper"}}}})
                .find("optimizer.adams_form: this key moved to optimizer.adams.form"),
            std::string::npos);
  // Configs stored by older versions (checkpoints, run directories) are migrated instead:
  // the keys of the method's sections move, the others (resolved configs listed them all) go.
  for (const char* name : {"scape", "adamw"}) {
    json old = {{"optimizer",
                 {{"name", name},
                  {"sparsity", 0.9},
                  {"scape_reading", "B"},
                  {"adams_form", "paper"},
                  {"catch_up_max", 2},
                  {"lr", 0.01}}}};
    run::migrate_legacy_config(old);
    const run::RunConfig c = run::parse_run_config(old, "old");
    EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.01);
    if (std::string(name) == "scape") {
      EXPECT_DOUBLE_EQ(c.optimizer.scape.sparsity, 0.9);
      EXPECT_EQ(c.optimizer.scape.reading, optim::ScapeReading::SCAPE_READING_B);
      EXPECT_EQ(c.optimizer.scape.catch_up_max, 2);
      EXPECT_EQ(c.optimizer.adams.form, optim::AdamsForm::ADAMS_FORM_PAPER);
    } else {
      EXPECT_FALSE(old["optimizer"].contains("scape"));
      EXPECT_FALSE(old["optimizer"].contains("sparsity"));
    }
  }
}

TEST(LrSchedule, WarmupThenCosineToTheFloor) {
  optim::ScheduleConfig s;
  s.warmup_steps = 10;
  s.min_lr_ratio = 0.1;
  EXPECT_DOUBLE_EQ(optim::lr_at(s, 1.0, 0, 110), 0.1);
  EXPECT_DOUBLE_EQ(optim::lr_at(s, 1.0, 9, 110), 1.0);
  EXPECT_DOUBLE_EQ(optim::lr_at(s, 1.0, 10, 110), 1.0);
  EXPECT_NEAR(optim::lr_at(s, 1.0, 60, 111), 0.55, 1e-12);  // half way: (1 + 0.1) / 2
  EXPECT_NEAR(optim::lr_at(s, 1.0, 110, 111), 0.1, 1e-12);
  s.decay = optim::Decay::DECAY_LINEAR;
  EXPECT_NEAR(optim::lr_at(s, 2.0, 60, 111), 1.1, 1e-12);
  s.decay = optim::Decay::DECAY_CONSTANT;
  EXPECT_DOUBLE_EQ(optim::lr_at(s, 2.0, 100, 111), 2.0);
}

// Warm-up-stable-decay: the peak until the last decay_steps steps, a linear decay to the floor;
// a run made longer in its stable phase keeps its lr where cosine jumps.
TEST(LrSchedule, WsdHoldsThePeakThenDecaysAndContinuesWhenMadeLonger) {
  optim::ScheduleConfig s;
  s.warmup_steps = 10, s.min_lr_ratio = 0.1, s.decay = optim::Decay::DECAY_WSD, s.decay_steps = 21;
  EXPECT_DOUBLE_EQ(optim::lr_at(s, 1.0, 0, 110), 0.1);
  EXPECT_DOUBLE_EQ(optim::lr_at(s, 1.0, 88, 110), 1.0);     // the last stable step
  EXPECT_DOUBLE_EQ(optim::lr_at(s, 1.0, 89, 110), 1.0);     // the decay's first step: the peak
  EXPECT_NEAR(optim::lr_at(s, 1.0, 99, 110), 0.55, 1e-12);  // half way
  EXPECT_NEAR(optim::lr_at(s, 1.0, 109, 110), 0.1, 1e-12);  // the last step: the floor
  for (int64_t step : {10, 50, 88})  // made longer: the same lr in the stable phase
    EXPECT_EQ(optim::lr_at(s, 1.0, step, 110), optim::lr_at(s, 1.0, step, 1000));
  optim::ScheduleConfig cosine;
  cosine.warmup_steps = 10;
  EXPECT_NE(optim::lr_at(cosine, 1.0, 50, 110), optim::lr_at(cosine, 1.0, 50, 1000));
  s.decay_steps = 0;
  EXPECT_THROW(s.validate(), Error);
  cosine.decay_steps = 5;
  EXPECT_THROW(cosine.validate(), Error);
}

TEST(JsonPath, DottedPathsWalkObjectsOnly) {
  const nlohmann::json j = nlohmann::json::parse(
      R"({"optimizer": {"scape": {"sparsity": 0.9}, "betas": [1, 2]}, "a.b": 1})");
  const nlohmann::json* v = io::find_dotted(j, "optimizer.scape.sparsity");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(*v, 0.9);
  EXPECT_EQ(io::find_dotted(j, "optimizer.scape"), &j["optimizer"]["scape"]);
  EXPECT_EQ(io::find_dotted(j, "optimizer.scape.missing"), nullptr);
  EXPECT_EQ(io::find_dotted(j, "optimizer.betas.0"), nullptr);  // arrays are not walked
  EXPECT_EQ(io::find_dotted(j, "optimizer.scape.sparsity.x"), nullptr);
  EXPECT_EQ(io::find_dotted(j, "a.b"), nullptr);  // a dot always separates keys
  EXPECT_EQ(io::find_dotted(j, ""), nullptr);
}

TEST(RunConfig, LocalStepsAreANumberOrAPerRankList) {
  auto err = [](json j) {
    return error_of([&] { run::parse_run_config(j, "r.json").validate(1); });
  };
  auto gasloc = [](json steps) {
    return json{{"optimizer", {{"name", "gasloc"}, {"gasloc", {{"local_steps", steps}}}}}};
  };
  run::RunConfig one = run::parse_run_config(gasloc(7), "r");
  EXPECT_FALSE(one.optimizer.gasloc.local_steps.per_rank());
  EXPECT_EQ(one.optimizer.gasloc.local_steps.of(3), 7);
  run::RunConfig list = run::parse_run_config(gasloc({1, 4, 2}), "r");
  EXPECT_TRUE(list.optimizer.gasloc.local_steps.per_rank());
  EXPECT_EQ(list.optimizer.gasloc.local_steps.of(1), 4);
  EXPECT_EQ(list.optimizer.gasloc.local_steps.max(), 4);
  // The resolved config writes a number back as a number and a list as a list.
  EXPECT_EQ(run::to_json(one)["optimizer"]["gasloc"]["local_steps"], json(7));
  EXPECT_EQ(run::to_json(list)["optimizer"]["gasloc"]["local_steps"], json({1, 4, 2}));
  EXPECT_EQ(run::parse_run_config(run::to_json(list), "resolved").optimizer.gasloc.local_steps,
            list.optimizer.gasloc.local_steps);

  EXPECT_NE(err(gasloc("four")).find("optimizer.gasloc.local_steps: expected an integer or list"),
            std::string::npos);
  EXPECT_NE(err(gasloc(json::array())).find("optimizer.gasloc.local_steps: expected"),
            std::string::npos);
  EXPECT_NE(err(gasloc({1, 2.5})).find("optimizer.gasloc.local_steps[1]: expected an integer"),
            std::string::npos);
  EXPECT_NE(err(gasloc({3, 0})).find("optimizer.gasloc.local_steps[1]: must be >= 1"),
            std::string::npos);
  EXPECT_NE(err(gasloc(0)).find("optimizer.gasloc.local_steps: must be >= 1"), std::string::npos);
  EXPECT_NE(err({{"optimizer", {{"name", "gossip"}, {"gossip", {{"gossip_weight", 1.5}}}}}})
                .find("optimizer.gossip.gossip_weight: must lie in [0, 1]"),
            std::string::npos);
  EXPECT_NE(err({{"optimizer", {{"name", "diloco"}, {"diloco", {{"outer_lr", 0}}}}}})
                .find("optimizer.diloco.outer_lr: must be > 0"),
            std::string::npos);
  // Defaults: DiLoCo's H 500, 0.7, 0.9; gossip one step per mixing.
  const run::RunConfig d = run::parse_run_config(json::object(), "r");
  EXPECT_EQ(d.optimizer.diloco.local_steps.of(0), 500);
  EXPECT_EQ(d.optimizer.gasloc.local_steps.of(0), 500);
  EXPECT_EQ(d.optimizer.gossip.local_steps.of(0), 1);
  EXPECT_DOUBLE_EQ(d.optimizer.gasloc.outer_lr, 0.7);
  EXPECT_DOUBLE_EQ(d.optimizer.diloco.outer_momentum, 0.9);
}
