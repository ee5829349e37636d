#!/usr/bin/env bash
# After the whole test suite: counts the processes the tests started that are
# still alive (our binaries under target/, the npm and Python servers under
# tests-deps/, PostgreSQL servers in the directories scripts/postgres.sh and
# loopwright-test-support make, the chromium that playwright-core starts with
# a profile of its own), and fails naming them. Orphans are adopted by init, so they
# are found by what they run, not by their parent. Killed servers may take a
# moment to go: they get LEFTOVER_GRACE_TENTHS tenths of a second.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
LEFTOVER_GRACE_TENTHS=30
list() {
    # pid, state, command line; zombies are gone already (only unreaped).
    # The paths go through the environment: in awk's own arguments they
    # would make awk match itself.
    ps -eo pid=,stat=,args= | TARGET="$root/target/" DEPS="$root/tests-deps/" \
        PG1="/loopwright-pg." PG2="/loopwright-test-postgres/" PW="/playwright_chromiumdev_profile-" awk '
        $2 !~ /^Z/ && (index($3, ENVIRON["TARGET"]) == 1 || index($0, ENVIRON["DEPS"]) > 0 \
            || index($0, ENVIRON["PG1"]) > 0 || index($0, ENVIRON["PG2"]) > 0 \
            || index($0, ENVIRON["PW"]) > 0) { print }'
}
for _ in $(seq "$LEFTOVER_GRACE_TENTHS"); do
    [ -z "$(list)" ] && { echo "leftover processes after the tests: 0"; exit 0; }
    sleep 0.1
done
left="$(list)"
echo "leftover processes after the tests: $(wc -l <<<"$left")" >&2
echo "$left" >&2
exit 1
