# quantization algorithms: target_sources(cedar_algorithms PRIVATE ...)
