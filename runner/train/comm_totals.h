#pragma once
// Every rank's communication totals per collective, for the run's comm_totals rows.
#include <vector>

#include "comm/communicator.h"
#include "comm/metered_communicator.h"
#include "results/store.h"

namespace cedar {

// Collective on `control` (one allgather): the totals `metered` counted on each rank, one row per
// rank and collective that was called at least once, in rank order. Every rank gets all rows.
std::vector<CommTotalRow> gather_comm_totals(const MeteredCommunicator& metered,
                                             Communicator& control);

}  // namespace cedar
