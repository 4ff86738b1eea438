// Simulated time (comm/sim_clock.h, comm/sim_network.h) on the in-process backend, against
// completion times worked out by hand here: a message of b bytes from a rank whose rate is R
// bytes/s arrives at (its send time, or when its sender's earlier messages have left) + b / R +
// the latency; an operation completes at its last arrival, and the rank's clock jumps there when
// it waits. Compute comes from fake CPU counters, so the expected times are exact. Also the
// networks' rates (slow rank, clusters, per rank) and bad settings refused naming the key.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/inprocess_communicator.h"
#include "comm/sim_clock.h"
#include "core/error.h"

namespace {

using gossamer::comm::Communicator;
using gossamer::comm::DType;
using gossamer::comm::ReduceOp;
using gossamer::comm::SimClock;
using gossamer::comm::SimConfig;
using gossamer::comm::SimNetwork;
using gossamer::comm::SimNetworkKind;

// Runs f(comm, cpu) on every rank in its own thread, where *cpu is that rank's fake CPU seconds
// (the clock's compute source); returns each rank's clock at the end.
std::vector<double> run_clocked(const SimConfig& config, int P,
                                const std::function<void(Communicator&, double* cpu)>& f) {
  auto net = std::make_shared<const SimNetwork>(config, P);
  auto comms = gossamer::comm::make_inprocess_communicators(P, net, config.compute_scale);
  std::vector<double> cpu(size_t(P), 0.0), end(size_t(P), -1.0);
  for (int r = 0; r < P; ++r) {
    double* c = &cpu[size_t(r)];
    comms[size_t(r)]->sim_clock()->set_cpu_source([c] { return *c; });
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < P; ++r)
    threads.emplace_back([&, r] {
      f(*comms[size_t(r)], &cpu[size_t(r)]);
      end[size_t(r)] = comms[size_t(r)]->sim_clock()->now();
    });
  for (auto& t : threads) t.join();
  return end;
}

SimConfig uniform(double mbit, double latency_us) {
  SimConfig c;
  c.network = SimNetworkKind::SIM_NETWORK_UNIFORM;
  c.bandwidth_mbit = mbit;
  c.latency_us = latency_us;
  return c;
}

TEST(SimClock, AllReduceTakesTwoPhasesOfQueuedMessages) {
  // 3 ranks at 8 Mbit/s = 1e6 B/s, latency 100 us, 3000 floats: parts of b = 4000 bytes. Each
  // rank sends its two parts one after the other (to rank+1, then rank+2), so the later one
  // arrives at 2b/R + L; the gather phase starts there and ends 2b/R + L later: 4b/R + 2L.
  const double R = 1e6, L = 1e-4, b = 4000;
  auto end = run_clocked(uniform(8, 100), 3, [](Communicator& c, double*) {
    std::vector<float> x(3000, 1.0f);
    c.all_reduce(x.data(), x.size(), DType::F32, ReduceOp::SUM).wait();
  });
  for (int r = 0; r < 3; ++r) EXPECT_NEAR(end[size_t(r)], 4 * b / R + 2 * L, 1e-12) << r;
}

TEST(SimClock, ComputeDelaysThePartnersAndScales) {
  // Rank 1 computes 0.5 CPU seconds (x compute_scale 2 = 1 s) before a sendrecv with rank 0 of
  // 1e5 bytes each way at 8 Mbit/s (0.1 s): rank 0 receives at 1 + 0.1 s; rank 1 received at
  // 0.1 s, but its own message has left only at 1.1 s (a send completes when its last byte has
  // left). Rank 2 computes 0.25 s and takes no part.
  SimConfig c = uniform(8, 0);
  c.compute_scale = 2;
  auto end = run_clocked(c, 3, [](Communicator& comm, double* cpu) {
    if (comm.rank() == 1) *cpu += 0.5;
    if (comm.rank() == 2) {
      *cpu += 0.25;
      return;
    }
    std::vector<uint8_t> out(100000, 1), in(100000);
    const int peer = 1 - comm.rank();
    comm.sendrecv(out.data(), out.size(), peer, in.data(), in.size(), peer, DType::U8).wait();
  });
  EXPECT_NEAR(end[0], 1.1, 1e-12);
  EXPECT_NEAR(end[1], 1.1, 1e-12);
  EXPECT_NEAR(end[2], 0.5, 1e-12);
}

TEST(SimClock, ASlowRanksMessagesAreSlowAndQueue) {
  // slow_rank: rank 1 sends at 0.8 Mbit/s = 1e5 B/s, rank 0 at 8 Mbit/s. Rank 1 sends two
  // messages of 1e4 bytes: the second waits for the first, arriving at 0.2 s.
  SimConfig c = uniform(8, 0);
  c.network = SimNetworkKind::SIM_NETWORK_SLOW_RANK;
  c.slow_rank = 1;
  c.slow_bandwidth_mbit = 0.8;
  auto end = run_clocked(c, 2, [](Communicator& comm, double*) {
    std::vector<uint8_t> a(10000, 1), b(10000, 2);
    if (comm.rank() == 1) {
      auto s1 = comm.send(a.data(), a.size(), DType::U8, 0);
      auto s2 = comm.send(b.data(), b.size(), DType::U8, 0);
      s1.wait(), s2.wait();
    } else {
      comm.recv(a.data(), a.size(), DType::U8, 1).wait();
      comm.recv(b.data(), b.size(), DType::U8, 1).wait();
    }
  });
  EXPECT_NEAR(end[0], 0.2, 1e-12);  // the second message's arrival
  EXPECT_NEAR(end[1], 0.2, 1e-12);  // a send completes when its last byte has left
}

TEST(SimClock, NoTimePassesWithoutComputeOrMessagesAndClocksNeverGoBack) {
  auto end = run_clocked(uniform(1000, 0), 2, [](Communicator& comm, double* cpu) {
    SimClock& clock = *comm.sim_clock();
    EXPECT_EQ(clock.now(), 0.0);
    *cpu = 3.0;
    EXPECT_EQ(clock.now(), 3.0);
    clock.wait_until(1.0);  // an operation that completed earlier: no jump back
    EXPECT_EQ(clock.now(), 3.0);
    EXPECT_EQ(clock.waited_s(), 0.0);
    clock.advance(0.5);  // a sleep (GOSSAMER_FAULT=delay) counts as compute
    clock.wait_until(4.0);
    EXPECT_EQ(clock.waited_s(), 0.5);
    EXPECT_EQ(clock.compute_s(), 3.5);
  });
  EXPECT_EQ(end[0], 4.0);
}

// parallel.sim.gflops: the trainer swaps the CPU counter for the model's FLOPs over the rate
// once the model exists. What the old source counted stays charged, the new one counts from its
// value at the swap, and an empty source (the model gone) charges nothing more.
TEST(SimClock, ASwappedComputeSourceKeepsWhatTheOldOneCharged) {
  auto end = run_clocked(uniform(1000, 0), 2, [](Communicator& comm, double* cpu) {
    SimClock& clock = *comm.sim_clock();
    *cpu = 2.0;
    double flops = 1e9;
    clock.set_cpu_source([&flops] { return flops / 1e9; });  // charges cpu's 2 s first
    EXPECT_EQ(clock.now(), 2.0);
    flops = 4e9;
    EXPECT_EQ(clock.now(), 5.0);
    flops = 6e9;
    clock.set_cpu_source({});
    flops = 100e9;
    EXPECT_EQ(clock.now(), 7.0);
    EXPECT_EQ(clock.compute_s(), 7.0);
  });
  EXPECT_EQ(end[0], 7.0);
}

TEST(SimNetwork, RatesOfEachKind) {
  SimConfig c = uniform(800, 5);
  SimNetwork u(c, 4);
  EXPECT_DOUBLE_EQ(u.bytes_per_s(0, 3), 1e8);
  EXPECT_DOUBLE_EQ(u.latency_s(), 5e-6);
  c.network = SimNetworkKind::SIM_NETWORK_CLUSTERS;
  c.slow_bandwidth_mbit = 80;
  c.clusters = 2;
  SimNetwork cl(c, 5);  // clusters {0, 1, 2}, {3, 4}: rank r in r * 2 / 5
  EXPECT_DOUBLE_EQ(cl.bytes_per_s(0, 2), 1e8);
  EXPECT_DOUBLE_EQ(cl.bytes_per_s(2, 3), 1e7);
  EXPECT_DOUBLE_EQ(cl.bytes_per_s(4, 1), 1e7);
  EXPECT_DOUBLE_EQ(cl.bytes_per_s(3, 4), 1e8);
  c.network = SimNetworkKind::SIM_NETWORK_PER_RANK;
  c.rank_mbit.mbit = {8, 16, 24};
  SimNetwork pr(c, 3);
  EXPECT_DOUBLE_EQ(pr.bytes_per_s(1, 0), 2e6);
  EXPECT_DOUBLE_EQ(pr.bytes_per_s(2, 1), 3e6);
}

void expect_refused(const SimConfig& c, int ranks, const std::string& key) {
  try {
    SimNetwork n(c, ranks);
    ADD_FAILURE() << "accepted, expected an error naming " << key;
  } catch (const gossamer::Error& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

TEST(SimNetwork, BadSettingsAreRefusedNamingTheKey) {
  SimConfig c = uniform(0, 0);
  expect_refused(c, 2, "parallel.sim.bandwidth_mbit");
  c = uniform(100, -1);
  expect_refused(c, 2, "parallel.sim.latency_us");
  c = uniform(100, 0);
  c.compute_scale = 0;
  expect_refused(c, 2, "parallel.sim.compute_scale");
  c = uniform(100, 0);
  c.network = SimNetworkKind::SIM_NETWORK_SLOW_RANK;
  c.slow_rank = 4;
  expect_refused(c, 4, "parallel.sim.slow_rank: rank 4 does not exist");
  c.slow_rank = 1;
  c.slow_bandwidth_mbit = -3;
  expect_refused(c, 4, "parallel.sim.slow_bandwidth_mbit");
  c = uniform(100, 0);
  c.network = SimNetworkKind::SIM_NETWORK_CLUSTERS;
  c.clusters = 3;
  expect_refused(c, 2, "parallel.sim.clusters");
  c = uniform(100, 0);
  c.network = SimNetworkKind::SIM_NETWORK_PER_RANK;
  c.rank_mbit.mbit = {10, 10};
  expect_refused(c, 3, "parallel.sim.rank_mbit: 2 rates for 3 ranks");
  c.rank_mbit.mbit = {10, 0, 10};
  expect_refused(c, 3, "parallel.sim.rank_mbit[1]");
}

}  // namespace
