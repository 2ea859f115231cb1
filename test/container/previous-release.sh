#!/usr/bin/env bash
# The image of the previous release, for the rollback test of test/container/container.test.ts:
# built from the commit test/container/previous-release names (its files as `git archive` gives
# them, with its own Dockerfile), tagged campusgate:release-<commit>, only when no image of that tag
# is present. Prints the tag. .ci/run calls it ahead of the test, while the other steps run.
#
# The previous release must know how to serve a schema a newer release migrated
# (docs/operations.md, "Upgrades and rollbacks"), and the current one must have migrations it does
# not: name a newer commit here as releases go by.
set -euo pipefail
cd "$(dirname "$0")/../.."
commit=$(tr -d '[:space:]' <test/container/previous-release)
tag="campusgate:release-${commit:0:12}"
if ! docker image inspect "$tag" >/dev/null 2>&1; then
  git cat-file -e "$commit^{commit}" ||
    { echo "previous-release: $commit is not in this clone's history" >&2 && exit 1; }
  git archive --format=tar "$commit" |
    DOCKER_BUILDKIT=0 docker build --network host --force-rm --quiet \
      --build-arg REVISION="$commit" --tag "$tag" - >/dev/null
fi
echo "$tag"
