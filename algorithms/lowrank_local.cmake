# lowrank_local algorithms: target_sources(cedar_algorithms PRIVATE ...)
