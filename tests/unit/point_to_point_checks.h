#pragma once
// Point-to-point messages and sub-communicators, checked the same way on any backend (the
// in-process one in comm_test, MPI in mpi_tests): what arrives, and the metered bytes against
// the formulas written here (a send or sendrecv: the bytes sent, one latency step; a recv: none).
#include "comm/communicator.h"

namespace cedar::testing {

// A ring shift both ways with sendrecv, a send/recv pair with tags, a receive of the wrong
// size rejected, and their metered counts. Needs 2 or more ranks.
void check_point_to_point(Communicator& backend);

// recv_any: rank 0 receives one message from every other rank (their rank number, tag 5, in
// whichever order they arrive), learns each sender, and every rank's two messages sent with one
// tag arrive in order; no bytes are counted on the receiving side; recv_any_up_to takes an empty
// and a short message and refuses a long one. Needs 2 or more ranks.
void check_receive_from_any(Communicator& backend);

// post: every rank posts a 4 MiB message and then a small one to the next rank on a ring before
// it receives anything, then receives its predecessor's two (blocking sends of that size would
// wait for one another all round the ring); the data arrive in order and whole, posted messages
// are metered as sends (bytes, one latency step each), and wait_posted returns. Needs 2 or
// more ranks.
void check_posted_sends(Communicator& backend);

// A split into two halves (even and odd ranks, reversed by key) and a split by blocks of two
// ("intra"), with the levels' traffic counted in the parent under "<level>/<op>". Needs 2 or
// more ranks.
void check_split(Communicator& backend);

}  // namespace cedar::testing
