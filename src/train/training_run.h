// The training run behind run_training (train/trainer.h), internal to src/train: a
// TrainingRun opens and checks every input before it writes anything, builds the model and the
// optimizer, restores a checkpoint or initialises the weights, attaches the optimizer, then runs
// the steps (training_run.cpp); its evaluations and samples are training_run_eval.cpp.
// Invariant: every rank constructs it and calls run(); every collective inside happens on every
// rank at the same point.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "core/buffer.h"
#include "core/rng.h"
#include "data/loader.h"
#include "data/tokenizer.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "run/checkpoint.h"
#include "run/run_config.h"
#include "train/fault_injection.h"
#include "train/metrics_log.h"
#include "train/mfu.h"
#include "train/run_directory.h"
#include "train/step_telemetry.h"
#include "train/train_step.h"
#include "train/trainer.h"

namespace gossamer::train {

using nlohmann::json;

// The data a run reads, opened and checked before anything is written.
struct Inputs {
  data::DataLoader train;
  std::optional<data::DataLoader> val;
  std::unique_ptr<data::Tokenizer> tokenizer;  // only when samples are printed
};

Inputs open_inputs(const run::RunConfig& config, int world);

// The replicas of a method whose ranks hold different weights, at an evaluation.
struct ReplicaEval {
  std::vector<double> val_loss;   // per rank (train.eval_replica_batches)
  int64_t tokens = 0;             // evaluated per replica
  double consensus_distance = 0;  // mean over ranks of |x_r - mean(x)|
  double consensus_relative = 0;  // the same over |mean(x)|
  bool stopped = false;           // a signal abandoned the evaluation (on every rank)
};

// What one step produced, as every rank agrees on it (or as this rank saw it, on steps without
// agreement).
struct StepRecord {
  double loss = 0, lr = 0, seconds = 0;
  StepTimings timings;
  StepTelemetry telemetry;
  bool agreed = true;  // telemetry was exchanged: loss is the mean over ranks
  comm::CommStats comm;
  // Simulated time (parallel.sim): this rank's clock after the step and the step's share of it;
  // NaN when time is not simulated.
  double sim_time = std::numeric_limits<double>::quiet_NaN();
  double sim_s = std::numeric_limits<double>::quiet_NaN();
};

class TrainingRun {
 public:
  // `comm` carries the control values (losses, flags, norms, checkpoint state: host memory);
  // `buffers` the gradients and weights (the same communicator unless they live in device
  // memory at several ranks). `config` is validated.
  TrainingRun(comm::Communicator& comm, comm::Communicator& buffers, const kernels::OpTable& ops,
              run::RunConfig config, const TrainStart& start);
  // Detaches the simulated clock from the model's FLOP count (parallel.sim.gflops).
  ~TrainingRun();
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;
  int run();

 private:
  void warn_later_checkpoints() const;
  void warn_stretched_schedule(const json& saved, int64_t step) const;
  std::string weights_source(const TrainStart& start) const;
  void build_and_restore(const std::string& resume_path, const std::string& init_from,
                         const std::vector<std::string>& allow_change);
  void check_replica_contract() const;
  void check_device_support() const;
  void log_setup() const;
  StepRecord train_one_step(int64_t step);
  bool agrees_after(int64_t step) const;
  void record(const StepRecord& r);
  // Traffic of both communicators (counted once when they are the same).
  comm::CommStats traffic() const;
  // Runs fn with the weights evaluation sees in the model (the optimizer's, when its replicas
  // differ); every rank must call it at the same steps.
  void with_evaluation_weights(const std::function<void()>& fn);
  // Each replica's validation loss and the consensus distance, when the replicas differ now
  // (collective; before the evaluation weights are swapped in).
  std::optional<ReplicaEval> evaluate_replicas();
  // Returns false when a signal abandoned the evaluation (alike on every rank).
  bool evaluate_at(int64_t step, const std::optional<ReplicaEval>& replicas);
  // The evaluations and samples due after `step`: false when a signal abandoned them.
  bool evaluate_and_sample(bool eval, bool samples);
  // The signal that stops the run, agreed by every rank: the lowest rank's that received one.
  std::pair<int, int> agreed_signal();
  void sample();
  void checkpoint();

  comm::Communicator& comm_;
  comm::Communicator& buffers_;
  run::RunConfig config_;
  const run::TrainConfig& tc_;
  const int world_, rank_, B_, T_;
  const int64_t accum_, tokens_per_step_;
  const kernels::OpTable& ops_;
  Inputs inputs_;
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  HostBuffer<float> evaluation_weights_;  // when the replicas may differ
  run::TrainerState state_;
  std::string resumed_from_;
  std::unique_ptr<RunDirectoryLock> lock_;  // rank 0: the run directory is ours until the end
  json resolved_;
  std::optional<MetricsLog> metrics_;  // rank 0 writes the run directory
  std::optional<MfuMeter> mfu_;
  double flops_per_token_ = 0;
  FaultPlan fault_;
  HostBuffer<int32_t> tokens_, targets_;
  Rng sample_rng_;
  double step_time_sum_ = 0;
  int64_t timed_steps_ = 0, steps_this_run_ = 0;
  bool replica_check_due_ = false;
  bool peak_from_first_step_ = false;      // the peak-memory mark was reset after set-up
  double last_local_loss_ = std::nan("");  // this rank's loss at the last step it computed
};

}  // namespace gossamer::train
