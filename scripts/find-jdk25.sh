# Sourced by the project's scripts: points JAVA_HOME at a JDK 25 or newer, or stops with one line.
# Order: $JAVA_HOME if it is 25+, then JDKs under /usr/lib/jvm, /usr/local/lib/jvm, /opt/java, /opt.

hicache_java_major() { # prints the feature version of the JDK at $1, or nothing
  local rel="$1/release" v
  [ -x "$1/bin/javac" ] || return 0
  if [ -f "$rel" ]; then
    v=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$rel")
  else
    v=$("$1/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
  fi
  printf '%s' "$v"
}

hicache_find_jdk25() {
  local candidate major
  if [ -n "${JAVA_HOME:-}" ]; then
    major=$(hicache_java_major "$JAVA_HOME")
    if [ -n "$major" ] && [ "$major" -ge 25 ]; then return 0; fi
  fi
  for candidate in /usr/lib/jvm/* /usr/local/lib/jvm/* /opt/java/* /opt/jdk* /opt/*jdk*; do
    [ -d "$candidate" ] || continue
    major=$(hicache_java_major "$candidate")
    if [ -n "$major" ] && [ "$major" -ge 25 ]; then
      export JAVA_HOME="$candidate"
      return 0
    fi
  done
  echo "error: HiCache needs a JDK 25 or newer; install one (e.g. Temurin 25 into /usr/lib/jvm) or set JAVA_HOME to it." >&2
  return 1
}

hicache_find_jdk25 || exit 1
export PATH="$JAVA_HOME/bin:$PATH"
