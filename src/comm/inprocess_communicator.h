// The "inprocess" backend (issue 41): N ranks that are threads of one process, one Communicator
// per rank over a shared world of mailboxes, one FIFO per (source, destination, channel), where
// collectives and point-to-point traffic are separate channels (as MPI keeps them apart).
// An operation posts its messages when it is issued (a copy of the data) and takes its messages
// and writes its outputs when it completes; operations complete in issue order (waiting on one
// completes every earlier one first), so a rank never waits for a peer before it waits on a Work.
// Sums run at each element's owner in one fixed order: the owner's own value, then what ranks
// owner-1, owner-2, ... sent, accumulated in fp32 for bf16 and rounded once; the order of the zip
// decorator's plain reduce-scatter (src/comm/zip/zip_collectives.h), whose all-reduce parts are
// the same near-equal split, so the two give the same bits. Byte accounting is the analytic
// figures of byte_accounting.h, as on every backend.
// With a SimNetwork each rank has a SimClock (sim_clock()): messages carry the simulated time
// they arrive at, and waiting for an operation moves the clock to its simulated completion.
// Invariants: every rank issues the same collectives in the same order (a rank that issued
// another collective is named in an error); a message's size is checked where it is received.
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/sim_network.h"

namespace gossamer::comm {

// The communicators of a world of `ranks` ranks, element r for rank r; each is used by one
// thread. They share the world, which lives as long as any of them. With `network` (its ranks()
// must be `ranks`), each has a SimClock that charges its compute times compute_scale.
std::vector<std::unique_ptr<Communicator>> make_inprocess_communicators(
    int ranks, std::shared_ptr<const SimNetwork> network = nullptr, double compute_scale = 1);

}  // namespace gossamer::comm
