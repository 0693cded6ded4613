#!/usr/bin/env bash
# Simulator benchmark (not a test): replays the whole bundled trace (12,031 requests) with the 80-layer
# llama3-70b model (TP 4) in layered backup mode through the timed engine (the real controller on the simulated
# device), once on one instance and once on a fleet of 8 behind the cache-aware router, and prints for each
# the wall seconds and the simulated device events (operations completed) per second.
# Usage: bench/sim-bench.sh [TRACE [LIMIT]]   e.g. bench/sim-bench.sh traces/conversation_trace.jsonl 2000
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/find-jdk25.sh"
# The launcher (re)builds the shaded jar when a source is newer than it.
"$ROOT/hicache-sim.sh" --version >/dev/null
JAR="$ROOT/hicache-sim/target/hicache-sim-all.jar"
exec java --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Dhicache.repo.root="$ROOT" -cp "$JAR" \
  io.hicache.sim.engine.SimBench "$@" 2> >(grep -v '^WARNING: ' >&2)
