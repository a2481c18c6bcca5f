-- Cedar results store. One database holds many runs (of one or several suites). PRAGMA
-- user_version holds the schema version (results/database.h); a database of an older version is
-- migrated when opened, and columns it lacks are added there (results/database.cpp).
-- Bytes are what a rank sends: payload = what it contributes to a collective, bus = what it pushes
-- through its link under a bandwidth-optimal algorithm (nccl-tests factors). dense_bytes is the
-- payload a dense fp32 allreduce of all gradients would have cost for the same step.
PRAGMA foreign_keys = ON;

CREATE TABLE IF NOT EXISTS runs (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  suite         TEXT NOT NULL DEFAULT '',
  name          TEXT NOT NULL,
  algorithm     TEXT NOT NULL,
  model         TEXT NOT NULL,
  dataset       TEXT NOT NULL,
  world_size    INTEGER NOT NULL,
  seed          INTEGER NOT NULL,
  config        TEXT NOT NULL,           -- the resolved configuration (YAML)
  config_hash   TEXT NOT NULL,           -- hash of config, used by suites to skip completed runs
  code_version  TEXT NOT NULL,
  host          TEXT NOT NULL,
  backend       TEXT NOT NULL,           -- mpi / nccl / inproc / local
  network       TEXT NOT NULL DEFAULT '',-- network profile of the modeled times
  threads       INTEGER NOT NULL,        -- intra-op threads per rank
  parameters    INTEGER NOT NULL DEFAULT 0,
  start_time    TEXT NOT NULL,           -- ISO 8601 UTC
  end_time      TEXT,
  status        TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'diverged')),
  error         TEXT,
  final_test_accuracy REAL,
  best_test_accuracy  REAL,
  wall_seconds        REAL,
  total_payload_bytes INTEGER,
  total_bus_bytes     INTEGER,
  pid           INTEGER,                 -- rank 0's process id on host (liveness of 'running')
  heartbeat     REAL,                    -- unix time of rank 0's last write
  effective_momentum REAL,               -- the momentum the updates got: optimizer.momentum, or
                                         -- the algorithm's own (DGC, Signum), 0 for plain steps
  provenance    TEXT,                    -- JSON: command line, library versions, CPU / GPU, threads
  uuid          TEXT,                    -- globally unique id: names checkpoints and shards
  attempt       INTEGER NOT NULL DEFAULT 0, -- 0, then +1 each time the run is resumed
  results_mode  TEXT,                    -- wal / shards (results/results_mode.h)
  filesystem    TEXT,                    -- the database folder's filesystem, e.g. ext4, nfs
  workers       INTEGER,                 -- ranks computing gradients (world_size but servers)
  servers       INTEGER                  -- parameter-server ranks (0: all-reduce or gossip)
);

-- One row per training step (rank 0's view, plus the sum of payload bytes over all ranks). A
-- parameter-server run has one row per applied update (bsp: per round): payload and bus bytes are
-- what one of its workers pushed (their mean in a round), payload_bytes_all their sum.
CREATE TABLE IF NOT EXISTS steps (
  run_id            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step              INTEGER NOT NULL,
  epoch             INTEGER NOT NULL,
  wall_seconds      REAL NOT NULL,       -- since the start of training
  compute_seconds   REAL NOT NULL,       -- forward + backward + optimizer this step
  comm_seconds      REAL NOT NULL,       -- inside the communicator this step
  payload_bytes     INTEGER NOT NULL,
  bus_bytes         INTEGER NOT NULL,
  payload_bytes_all INTEGER NOT NULL,    -- summed over ranks
  cum_payload_bytes INTEGER NOT NULL,
  cum_bus_bytes     INTEGER NOT NULL,
  dense_bytes       INTEGER NOT NULL,
  train_loss        REAL NOT NULL,
  train_accuracy    REAL NOT NULL,
  learning_rate     REAL NOT NULL,
  latency_steps     INTEGER NOT NULL,    -- alpha terms of the alpha-beta model this step
  modeled_comm_seconds REAL NOT NULL,    -- alpha-beta time on the run's network profile
  PRIMARY KEY (run_id, step)
);

-- Values an algorithm reports per step (e.g. LAG's number of uploads, DGC's density; a
-- parameter server's 'staleness' of each applied update, in versions, and its 'worker').
CREATE TABLE IF NOT EXISTS step_stats (
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step    INTEGER NOT NULL,
  key     TEXT NOT NULL,
  value   REAL NOT NULL,
  PRIMARY KEY (run_id, step, key)
);

-- Per training step and level of sub-communicators (a hierarchical exchange's "intra" and
-- "inter"): rank 0's traffic of that level, which the step's row includes too. Each level is
-- modeled on its own network profile (network.intra_profile inside a node, network.profile
-- between nodes); `ranks` is the size of rank 0's communicator of that level; comm_seconds the
-- seconds rank 0 spent inside that level's communicators (part of the step's comm_seconds; NULL
-- in rows written before it was recorded).
CREATE TABLE IF NOT EXISTS step_levels (
  run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step          INTEGER NOT NULL,
  level         TEXT NOT NULL,
  ranks         INTEGER NOT NULL,
  profile       TEXT NOT NULL,         -- the network profile of modeled_comm_seconds
  calls         INTEGER NOT NULL,
  payload_bytes INTEGER NOT NULL,
  bus_bytes     INTEGER NOT NULL,
  latency_steps INTEGER NOT NULL,
  modeled_comm_seconds REAL NOT NULL,
  comm_seconds  REAL,
  PRIMARY KEY (run_id, step, level)
);

-- One row per evaluation on the full test set (summed over ranks).
CREATE TABLE IF NOT EXISTS evals (
  run_id            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step              INTEGER NOT NULL,
  epoch             REAL NOT NULL,       -- fractional when evaluated mid-epoch
  wall_seconds      REAL NOT NULL,
  cum_payload_bytes INTEGER NOT NULL,
  cum_bus_bytes     INTEGER NOT NULL,
  test_loss         REAL NOT NULL,
  test_accuracy     REAL NOT NULL,
  train_loss        REAL,                -- mean over the epoch so far
  train_accuracy    REAL,
  consensus_distance REAL,               -- mean over ranks of ||x_i - x_bar||^2 (parameters)
  PRIMARY KEY (run_id, step)
);

-- Per rank and collective: totals over the run, from the metering layer.
CREATE TABLE IF NOT EXISTS comm_totals (
  run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank          INTEGER NOT NULL,
  op            TEXT NOT NULL,
  calls         INTEGER NOT NULL,
  elements      INTEGER NOT NULL,
  payload_bytes INTEGER NOT NULL,
  bus_bytes     INTEGER NOT NULL,
  seconds       REAL NOT NULL,
  PRIMARY KEY (run_id, rank, op)
);

-- Runs a suite process has taken on (several suites may share one database): a claim holds
-- while its process lives (same host) or, from another host, while its run is running with a
-- fresh heartbeat (or for its first ten minutes).
CREATE TABLE IF NOT EXISTS claims (
  config_hash TEXT PRIMARY KEY,
  host        TEXT NOT NULL,
  pid         INTEGER NOT NULL,
  claimed     REAL NOT NULL              -- unix time
);

-- In a shard (<db>.shards/<uuid>.<attempt>.db, results/shards.h): the one run it holds, which
-- attempt of that run it is, and the step its rows start at when the attempt resumed a checkpoint.
CREATE TABLE IF NOT EXISTS shard_info (
  uuid              TEXT NOT NULL,
  attempt           INTEGER NOT NULL,
  resumed_from_step INTEGER NOT NULL       -- -1: the run's first attempt
);

-- In a main database: the shards `cedar merge` has folded into it (results/merge.h).
CREATE TABLE IF NOT EXISTS merged_shards (
  name       TEXT PRIMARY KEY,             -- file name in <db>.shards/
  uuid       TEXT NOT NULL,
  attempt    INTEGER NOT NULL,
  run_id     INTEGER NOT NULL,             -- the run's id in this database
  step_rows  INTEGER NOT NULL,
  merged     REAL NOT NULL                 -- unix time
);

CREATE INDEX IF NOT EXISTS runs_by_suite ON runs(suite, name);
