#!/usr/bin/env bash
# Submits a batch script to Berth from a CI job, follows its output to its end, and exits
# with the job's exit status (0 when it COMPLETED, its exit code when it failed with one,
# 1 when it was cancelled, timed out or killed), so the CI step fails when training does.
#
#   examples/ci/submit-and-follow.sh SCRIPT [SBATCH_OPTION...]
#   examples/ci/submit-and-follow.sh train.sbatch --gpus=8 -t 4:00:00
#
# Needs: BERTH_URL and BERTH_TOKEN (an API token: `berth token create --name ci
# --scope submit`; keep it in the CI system's secrets), the `berth` CLI on PATH (or
# BERTH_BIN), curl and jq.
#
# The submission carries an Idempotency-Key (BERTH_IDEMPOTENCY_KEY, else derived from the
# CI run: GitHub's repository, run id, attempt and job; GitLab's job id), so that when
# this step is retried within the same run (a lost connection while following, a runner
# restart) it finds the job it submitted and follows it again instead of starting a
# second training run. The api answers the same key and the same body with the first job;
# the body holds the script and options, and nothing of the CI environment (variables a
# job needs go in the script or in `--export=NAME=value` options). Leave out the
# attempt (set BERTH_IDEMPOTENCY_KEY yourself) if a re-run of the workflow should
# re-attach too rather than train again.
#
# The `berth` CLI streams the output (`berth logs -f`); the submission goes through curl
# because `berth submit` makes up its own Idempotency-Key and takes none from the caller.
set -euo pipefail

if [ $# -lt 1 ] || [ ! -f "$1" ]; then
  echo "usage: $0 SCRIPT [SBATCH_OPTION...]   (BERTH_URL, BERTH_TOKEN set)" >&2
  exit 2
fi
script=$1
shift
: "${BERTH_URL:?set BERTH_URL to the api (https://berth.example.com)}"
: "${BERTH_TOKEN:?set BERTH_TOKEN (from the CI system secrets)}"
berth=${BERTH_BIN:-berth}
url=${BERTH_URL%/}

if [ -n "${BERTH_IDEMPOTENCY_KEY:-}" ]; then
  key=$BERTH_IDEMPOTENCY_KEY
elif [ -n "${GITHUB_RUN_ID:-}" ]; then
  key="github/${GITHUB_REPOSITORY:-}/${GITHUB_RUN_ID}/${GITHUB_RUN_ATTEMPT:-1}/${GITHUB_JOB:-}"
elif [ -n "${CI_JOB_ID:-}" ]; then
  key="gitlab/${CI_PROJECT_PATH:-}/${CI_JOB_ID}"
else
  key="submit-and-follow/$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  echo "submit-and-follow: no CI run id found; a random Idempotency-Key only protects this run's own retries" >&2
fi

# The token goes to curl in a header file, never on its command line (other users of the
# machine could read it there) or in the output.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
printf 'Authorization: Bearer %s\n' "$BERTH_TOKEN" >"$scratch/auth"
chmod 600 "$scratch/auth"
# One api request; the answer's body goes to $scratch/answer (curl empties the file before
# each retry; on standard output it would keep the refused answers too), its status to
# standard output.
api() {
  curl -sS --header @"$scratch/auth" --retry 10 --retry-connrefused --retry-max-time 120 \
    -o "$scratch/answer" -w '%{http_code}' "$@"
}

jq -n --rawfile script "$script" --arg name "$(basename "$script")" \
  '{script: $script, script_name: $name, args: $ARGS.positional}' --args -- "$@" >"$scratch/body"
status=$(api -X POST "$url/v1/jobs" -H 'Content-Type: application/json' \
  -H "Idempotency-Key: $key" --data-binary @"$scratch/body") || {
  echo "submit-and-follow: could not reach $url" >&2
  exit 1
}
case $status in
  201) id=$(jq -r .id "$scratch/answer"); echo "Submitted batch job $id" ;;
  200) id=$(jq -r .id "$scratch/answer"); echo "Following batch job $id, submitted earlier with this Idempotency-Key" ;;
  *)
    echo "submit-and-follow: submission refused (HTTP $status): $(jq -r '.detail // .' "$scratch/answer" 2>/dev/null || cat "$scratch/answer")" >&2
    exit 1
    ;;
esac

# The whole output from its start (also after a retry), until the job ends.
BERTH_URL=$url "$berth" logs -f "$id" || echo "submit-and-follow: following the output failed; waiting for the job" >&2

# The job's final state: the output stream ends with the job, but wait for its final
# state in case the stream was cut.
while :; do
  status=$(api "$url/v1/jobs/$id") || status=unreachable
  if [ "$status" != 200 ]; then
    echo "submit-and-follow: reading job $id failed (HTTP $status): $(cat "$scratch/answer")" >&2
    exit 1
  fi
  state=$(jq -r .state "$scratch/answer")
  case $state in PENDING | RUNNING | SUSPENDED | COMPLETING) sleep 2 ;; *) break ;; esac
done
code=$(jq -r '.exit_code // empty' "$scratch/answer")
# As `berth submit --wait`: 0 for COMPLETED, a non-zero exit code as it is, else 1.
if [ "$state" = COMPLETED ]; then
  rc=0
elif [ -n "$code" ] && [ "$code" -ne 0 ]; then
  rc=$((code < 1 ? 1 : code > 255 ? 255 : code))
else
  rc=1
fi
echo "Job $id $state, exit code ${code:-none}" >&2
exit "$rc"
