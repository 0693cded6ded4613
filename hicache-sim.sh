#!/usr/bin/env bash
# Launcher of the HiCache simulator (module hicache-sim/). Builds the shaded jar on first use or when
# a source is newer than it, finds a JDK 25, and runs it in the caller's directory; the repository
# root is passed so the bundled trace resolves from anywhere.
# (Named hicache-sim.sh because the module directory hicache-sim/ already takes the plain name.)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$ROOT/scripts/find-jdk25.sh"
JAR="$ROOT/hicache-sim/target/hicache-sim-all.jar"

needs_build() {
  [ -f "$JAR" ] || return 0
  local m
  for m in cuda-bindings radix hicache-core hicache-storage hicache-events hicache-sim; do
    if [ -n "$(find "$ROOT/$m/src/main" "$ROOT/$m/pom.xml" -newer "$JAR" -print -quit 2>/dev/null)" ]; then
      return 0
    fi
  done
  [ -n "$(find "$ROOT/pom.xml" -newer "$JAR" -print -quit)" ]
}

if needs_build; then
  echo "hicache-sim: building $JAR ..." >&2
  (cd "$ROOT" && ./mvnw -q -B -ntp -DskipTests -Dmaven.javadoc.skip -Dmaven.source.skip package -pl hicache-sim -am) >&2 || {
    echo "hicache-sim: build failed; run './mvnw -B -ntp package -pl hicache-sim -am' in $ROOT for details" >&2
    exit 1
  }
fi

exec java --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -Dhicache.repo.root="$ROOT" -jar "$JAR" "$@"
