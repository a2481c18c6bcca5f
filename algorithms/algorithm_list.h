// The registered algorithms, one line each, in the order `cedar list`, the suites' `every:
// registered` entries and their comparison tables show them. CEDAR_ALGORITHM(id) registers the
// paper file algorithms/<id>.cpp, which defines `AlgorithmInfo <id>_algorithm()`: catalog.h
// declares that factory, registry.cpp lists it in algorithm_catalog() and CMakeLists.txt compiles
// the file. Adding an algorithm: docs/adding_an_algorithm.md.
//
// Read by the preprocessor with CEDAR_ALGORITHM defined by the includer (no include guard), and
// by CMake line by line: one CEDAR_ALGORITHM(id) per line, nothing else on it.
// clang-format off
CEDAR_ALGORITHM(dense_sgd)
CEDAR_ALGORITHM(dgc)
CEDAR_ALGORITHM(topk)
CEDAR_ALGORITHM(randomk)
CEDAR_ALGORITHM(threshold_v)
CEDAR_ALGORITHM(qsgd)
CEDAR_ALGORITHM(terngrad)
CEDAR_ALGORITHM(natural)
CEDAR_ALGORITHM(eightbit)
CEDAR_ALGORITHM(signsgd)
CEDAR_ALGORITHM(ef_signsgd)
CEDAR_ALGORITHM(onebit)
CEDAR_ALGORITHM(onebit_adam)
CEDAR_ALGORITHM(fp16)
CEDAR_ALGORITHM(powersgd)
CEDAR_ALGORITHM(accordion)
CEDAR_ALGORITHM(local_sgd)
CEDAR_ALGORITHM(lag)
CEDAR_ALGORITHM(lasg)
CEDAR_ALGORITHM(gtopk)
CEDAR_ALGORITHM(dpsgd)
CEDAR_ALGORITHM(choco_sgd)
CEDAR_ALGORITHM(hierarchical)
CEDAR_ALGORITHM(parameter_server)
CEDAR_ALGORITHM(script)
// clang-format on
