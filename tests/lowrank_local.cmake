# tests of the lowrank_local algorithms
