# tests of the lowrank_local algorithms (PowerSGD, LAG, local SGD) and the LARS optimizer
foreach(t powersgd_test lag_test local_sgd_test lars_test)
  cedar_add_test(${t} SOURCES unit/${t}.cpp LIBS cedar_training)
  cedar_torch_pch(${t})
endforeach()

# Under mpirun -np 2 and 4: ranks agree where the algorithms say they must; bytes equal formulas.
cedar_add_mpi_tests(mpi_lowrank_local_tests TESTS mpi_lowrank_local
  SOURCES mpi/mpi_lowrank_local_test.cpp LIBS cedar_training)
