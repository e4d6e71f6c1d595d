#!/usr/bin/env bash
# `npm run test:faults`: the fault suite under load (docs/reliability.md#how-it-is-measured). Locates or
# installs the system tools it needs, says which, then runs test/faults/**/*.test.ts with
# vitest.faults.config.ts. Each file prints a table of how many requests were answered with what and
# writes it to test/faults/results/<file>.json (git-ignored).
#   redis-server  Debian package redis-server  (the shared store, killed, blocked and frozen)
#   nginx         Debian package nginx         (the load balancer of the rolling restart)
# The load comes from the suite's own generator (test/faults/support/load.ts), not wrk: the scenarios need
# each request's outcome and latency, which wrk reports only in aggregate.
# Debian packages are installed with apt-get when missing (this needs root, as on CI).
set -euo pipefail
cd "$(dirname "$0")/.."

# nginx lives in /usr/sbin, which a user's PATH may lack.
export PATH="$PATH:/usr/sbin"
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v nginx >/dev/null || missing+=(nginx)
if [ ${#missing[@]} -gt 0 ]; then
  echo "test:faults: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Not NGINX: nginx reads a variable of that name as sockets inherited from a binary upgrade.
GENGATE_NGINX="$(command -v nginx)"
export GENGATE_NGINX
for tool in redis-server nginx; do
  printf 'test:faults: %-12s %s\n' "$tool" "$(command -v "$tool")"
done

exec npx --no vitest run --config vitest.faults.config.ts "$@"
