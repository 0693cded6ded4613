#!/usr/bin/env bash
# L3 storage benchmark (not a test): the file backend's batch put/get against dd on the same disk, and the
# Redis backend's put/get at 1 MiB and 64 KiB values against redis-benchmark on the same server, side by
# side in one run; prints the ratios and writes them into docs/PERFORMANCE.md (its storage section).
# Usage: bench/storage-bench.sh [--rounds N] [--file-mib N] [--file-page-mib N] [--io-threads N] [--dir DIR] [--no-report]
# Needs dd (coreutils). fio (apt-get install -y fio) adds a second reference for the buffered get. The Redis
# rows need redis-cli and redis-benchmark (apt-get update && apt-get install -y redis-tools; redis-server too
# for Debian's server) and a redis-server, found by scripts/redis-server-path (the system's, else the one the
# build brings); without them the Redis rows are skipped with a note.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
. scripts/find-jdk25.sh
command="bench/storage-bench.sh${*:+ $*}"
dir=""
report=1
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --no-report) report=0; shift ;;
    --rounds|--file-mib|--file-page-mib|--io-threads|--only) args+=("$1" "$2"); shift 2 ;;
    *) echo "unknown argument $1; use [--rounds N] [--file-mib N] [--dir DIR] [--no-report]" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/hicache-storage-bench.XXXXXX")
[[ -n "$dir" ]] || dir="$work/disk"
pid=""
cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done; fi
  rm -rf "$work"
}
trap cleanup EXIT
if [[ ! -f bench/target/benchmarks.jar ]] || [[ -n "$(find hicache-storage/src bench/src -newer bench/target/benchmarks.jar -name '*.java' | head -1)" ]]; then
  ./mvnw -q -B -ntp -DskipTests package -pl bench -am
fi
redis_server=""
if command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null; then
  redis_server=$(scripts/redis-server-path) || redis_server=""
fi
if [[ -n "$redis_server" ]]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$redis_server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --daemonize yes \
    --pidfile "$work/redis.pid" --logfile "$work/redis.log" >/dev/null
  for _ in $(seq 100); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
  pid=$(cat "$work/redis.pid")
  args+=(--redis-port "$port")
else
  echo "storage-bench: redis-benchmark/redis-cli or a redis-server missing; Redis rows skipped (apt-get update && apt-get install -y redis-server redis-tools)" >&2
fi
command -v fio >/dev/null || echo "storage-bench: fio not installed; the buffered get is compared with dd only (apt-get install -y fio)" >&2
[[ $report -eq 1 ]] && args+=(--out docs/PERFORMANCE.md)
java --enable-native-access=ALL-UNNAMED -cp bench/target/benchmarks.jar io.hicache.bench.StorageBench \
  --dir "$dir" --command "$command" "${args[@]}" 2> >(grep -v '^WARNING: ' | grep -v ' INFO ' >&2)
