#pragma once
// Every rank's communication totals per operation (collectives, messages, each level's as
// "<level>/<op>"), for the run's comm_totals rows.
#include <vector>

#include "comm/communicator.h"
#include "comm/metered_communicator.h"
#include "results/store.h"

namespace cedar {

// Collective on `control` (two allgathervs): the totals `metered` counted on each rank, one row per
// rank and operation that was called at least once, in rank order. Every rank gets all rows.
std::vector<CommTotalRow> gather_comm_totals(const MeteredCommunicator& metered,
                                             Communicator& control);

}  // namespace cedar
